#include "core/model/weight_format.hpp"

#include <algorithm>
#include <cmath>

#include "core/checked.hpp"
#include "core/error.hpp"

namespace kvplan {

WeightFormat parse_weight_format(const std::string& flag, const std::string& text) {
    WeightFormat f;
    f.name = text;
    if (text == "auto") return f;
    f.as_checkpoint = false;
    if (text == "q8_0" || text == "q4_0" || text == "q4_k_m") {
        // ggml-quants: block_q8_0 = 32 x int8 + fp16 d (34 B / 32 = 8.5 bits); block_q4_0 = 16 B of nibbles
        // + fp16 d (18 B / 32 = 4.5 bits); Q4_K_M mixes Q4_K (4.5 bits) with Q6_K (6.56 bits) for some tensors.
        f.bits_per_weight = text == "q8_0" ? 8.5 : text == "q4_0" ? 4.5 : 4.85;
        f.quantize_all_matrices = true;
        f.math = Dtype::Fp16;  // dequantized into fp16 matmuls / dot products
        f.kernel_efficiency = 0.85;
        return f;
    }
    if (text == "int4") {
        f.bits_per_weight = 4.0 + 16.0 / 128.0;  // GPTQ/AWQ style: an fp16 scale per group of 128
        f.math = Dtype::Fp16;
        return f;
    }
    auto d = parse_dtype(text);
    if (!d) usage_error(flag + " " + text + ": expected auto, fp32, fp16, bf16, fp8, int8, int4, q8_0, q4_0 or q4_k_m");
    f.bits_per_weight = dtype_bits(*d);
    f.math = *d == Dtype::Fp8 ? Dtype::Fp8 : *d == Dtype::Fp32 ? Dtype::Fp32 : *d == Dtype::Fp16 ? Dtype::Fp16 : Dtype::Bf16;
    return f;
}

WeightSizing size_weights_in(const ModelSpec& spec, const WeightFormat& f) {
    if (f.as_checkpoint) return size_weights(spec);
    WeightSizing out = size_weights(spec, Dtype::Bf16);  // params, active params and parts
    out.quantization = QuantMethod::None;
    out.dtype = f.math == Dtype::Fp32 ? Dtype::Fp32 : Dtype::Bf16;
    if (spec.params.empty()) {  // hand-built: --params only
        out.bytes = static_cast<std::int64_t>(std::ceil(static_cast<double>(out.params) * f.bits_per_weight / 8.0));
        return out;
    }
    out.bytes = 0;
    for (WeightPart& p : out.parts) p.bytes = 0;
    for (const ParamTensor& t : spec.params) {
        const double elements = static_cast<double>(t.rows) * static_cast<double>(t.cols) * static_cast<double>(t.copies);
        const bool matrix = t.cols > 1;
        const bool converted = matrix && (f.quantize_all_matrices || t.linear);
        const double bits = t.fixed_dtype ? dtype_bits(*t.fixed_dtype) : converted ? f.bits_per_weight : std::max(16.0, f.bits_per_weight);
        const std::int64_t bytes = static_cast<std::int64_t>(std::ceil(elements * bits / 8.0));
        out.bytes = checked_add(out.bytes, bytes, "weight bytes");
        for (WeightPart& p : out.parts)
            if (p.part == t.part) p.bytes = checked_add(p.bytes, bytes, "weight bytes");
    }
    return out;
}

Dtype checkpoint_math_dtype(const ModelSpec& spec) {
    if (spec.quantization.method == QuantMethod::Fp8 || spec.quantization.method == QuantMethod::FbgemmFp8 ||
        (spec.quantization.bits == 8 && spec.quantization.method == QuantMethod::ModelOpt))
        return Dtype::Fp8;
    return serving_dtype(spec.checkpoint_dtype) == Dtype::Bf16 ? Dtype::Bf16 : Dtype::Fp16;
}

}  // namespace kvplan
