#include "core/model/weight_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/checked.hpp"
#include "core/error.hpp"

namespace kvplan {

namespace {

// "int4:g32" -> 32; "int4" -> 128 (GPTQ's and AWQ's default group).
std::int64_t int4_group(const std::string& flag, const std::string& text) {
    if (text == "int4") return 128;
    const std::string g = text.substr(5);
    for (const char* ok : {"g32", "g64", "g128", "g256"})
        if (g == ok) return std::stoll(g.substr(1));
    usage_error(flag + " " + text + ": expected int4 or int4:gN with a group of N = 32, 64, 128 or 256 weights");
}

// "exl2:4.0" -> 4.0: ExLlamaV2 converts at any average width from 2 to 8 bits.
double exl2_bits(const std::string& flag, const std::string& text) {
    const std::string b = text.substr(5);
    char* end = nullptr;
    const double v = std::strtod(b.c_str(), &end);
    if (b.empty() || end != b.c_str() + b.size() || !(v >= 2.0 && v <= 8.0))
        usage_error(flag + " " + text + ": expected exl2:B with B bits per weight from 2 to 8, e.g. exl2:4.0");
    return v;
}

}  // namespace

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
        f.family = "gguf";
        return f;
    }
    if (text == "q4f16_1") {
        // MLC LLM's group quantization (python/mlc_llm/quantization/quantization.py, "q4f16_1": GroupQuantize
        // with group_size 32, fp16 scales, no zero point), applied to embeddings and the LM head as well.
        f.bits_per_weight = 4.0 + 16.0 / 32.0;
        f.quantize_all_matrices = true;
        f.math = Dtype::Fp16;
        f.family = "mlc";
        return f;
    }
    if (text.rfind("exl2:", 0) == 0) {
        // ExLlamaV2's bits per weight is the average over the linear layers, scales included; convert.py
        // writes the head at 6 bits by default (-hb 6).
        f.bits_per_weight = exl2_bits(flag, text);
        f.head_bits = 6.0;
        f.math = Dtype::Fp16;
        f.family = "exl2";
        return f;
    }
    if (text == "fp8:w8a8" || text == "fp8:w8a16") {
        // fp8 weights with per-channel scales. W8A8 runs fp8 GEMMs (vLLM's Fp8LinearMethod, cutlass_scaled_mm)
        // where the device has them, and falls back to weight-only like `fp8` elsewhere; W8A16 dequantizes
        // into 16-bit GEMMs on every device (vLLM's FP8 Marlin kernel, marlin_utils_fp8.py: "for GPUs that
        // lack FP8 hardware support ... fast weight-only FP8 quantization"; compressed-tensors W8A16-FP8).
        f.bits_per_weight = 8;
        f.math = text == "fp8:w8a8" ? Dtype::Fp8 : Dtype::Bf16;
        f.family = "fp8";
        return f;
    }
    if (text == "nvfp4") {
        // NVIDIA's NVFP4 (TensorRT Model Optimizer, NVFP4_DEFAULT_CFG): E2M1 values with one FP8 E4M3 scale per
        // 16 values, 4 + 8/16 = 4.5 bits, plus one fp32 scale per tensor (negligible); the LM head is left
        // 16-bit ("*lm_head*" disabled). vLLM runs it W4A4 on FP4 tensor cores (modelopt.py,
        // cutlass_scaled_fp4_mm) where the device has them, else weight-only through the FP4 Marlin kernel
        // (marlin_utils_fp4.py, group size 16) into 16-bit GEMMs: step_cost falls back to 16-bit math.
        f.bits_per_weight = 4.0 + 8.0 / 16.0;
        f.math = Dtype::Fp4;
        f.family = "nvfp4";
        return f;
    }
    if (text == "mxfp4") {
        // OCP Microscaling MXFP4 (OCP MX v1.0): E2M1 values with one E8M0 (8-bit power-of-two) scale per 32,
        // 4 + 8/32 = 4.25 bits, as gpt-oss ships its experts. Its serving kernels take 16-bit activations
        // (vLLM's mxfp4.py: mxfp4_w4a16_moe_quant_config, the triton_kernels and Marlin paths), so the math
        // is 16-bit; the MXFP8-activation path some Blackwell builds choose is not modelled.
        f.bits_per_weight = 4.0 + 8.0 / 32.0;
        f.math = Dtype::Bf16;
        f.family = "mxfp4";
        return f;
    }
    if (text == "int4" || text.rfind("int4:", 0) == 0) {
        f.group_size = int4_group(flag, text);
        f.bits_per_weight = 4.0 + 16.0 / static_cast<double>(f.group_size);  // a 16-bit scale per group
        f.math = Dtype::Fp16;
        f.family = "int4";
        return f;
    }
    auto d = parse_dtype(text);
    if (!d)
        usage_error(
            flag + " " + text +
            ": expected auto, fp32, fp16, bf16, fp8, fp8:w8a8, fp8:w8a16, int8, int4[:gN], nvfp4, mxfp4, q8_0, q4_0, q4_k_m, q4f16_1 or exl2:B");
    f.bits_per_weight = dtype_bits(*d);
    f.math = *d == Dtype::Fp8 ? Dtype::Fp8 : *d == Dtype::Fp32 ? Dtype::Fp32 : *d == Dtype::Fp16 ? Dtype::Fp16 : Dtype::Bf16;
    if (*d == Dtype::Fp8) f.family = "fp8";
    if (*d == Dtype::Int8) f.family = "int8";
    return f;
}

WeightFormat int4_as_stored(WeightFormat f, double group_bits, bool quantize_head) {
    if (f.family == "int4") f.bits_per_weight = 4.0 + group_bits / static_cast<double>(f.group_size);
    if (f.family == "int4" || f.family == "int8") f.quantize_head = quantize_head;
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
    for (WeightPart& p : out.parts) {
        p.bytes = 0;
        for (CappedShare& c : p.capped) c.bytes = 0;
    }
    for (const ParamTensor& t : spec.params) {
        const double elements = static_cast<double>(t.rows) * static_cast<double>(t.cols) * static_cast<double>(t.copies);
        const bool matrix = t.cols > 1;
        const bool head = t.part == ParamPart::Head;
        const bool converted = matrix && (f.quantize_all_matrices || t.linear || (head && f.quantize_head));
        double bits = t.fixed_dtype ? dtype_bits(*t.fixed_dtype) : converted ? f.bits_per_weight : std::max(16.0, f.bits_per_weight);
        if (head && f.head_bits && !t.fixed_dtype) bits = *f.head_bits;
        const std::int64_t bytes = static_cast<std::int64_t>(std::ceil(elements * bits / 8.0));
        out.bytes = checked_add(out.bytes, bytes, "weight bytes");
        for (WeightPart& p : out.parts)
            if (p.part == t.part) {
                p.bytes = checked_add(p.bytes, bytes, "weight bytes");
                if (t.max_tp_split > 0) capped_share(p, t.max_tp_split).bytes += bytes;
            }
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
