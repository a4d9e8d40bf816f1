#include "core/model/weights.hpp"

#include <algorithm>

#include "core/checked.hpp"

namespace kvplan {

namespace {

bool kept(const ParamTensor& t, const Quantization& q) {
    // Embeddings, the output head and MoE routers stay in 16 bits under every
    // scheme kvplan knows (DeepSeek-V3's checkpoint stores them BF16; gpt-oss
    // lists them in modules_to_not_convert; GPTQ/AWQ convert decoder linears only).
    if (!t.linear || t.part == ParamPart::Embedding || t.part == ParamPart::Head || t.part == ParamPart::Router) return true;
    return std::find(q.keep_parts.begin(), q.keep_parts.end(), t.part) != q.keep_parts.end();
}

}  // namespace

std::optional<std::int64_t> quantized_bytes(const ParamTensor& t, const Quantization& q) {
    if (q.method == QuantMethod::None || kept(t, q)) return std::nullopt;
    const std::int64_t elements = checked_mul(t.rows, t.cols, "tensor elements");
    std::int64_t scales = 1;  // group_size -1: one per tensor
    if (q.block_rows > 0) scales = ceil_div(t.rows, q.block_rows) * ceil_div(t.cols, q.block_cols);
    else if (q.group_size > 0) scales = checked_mul(t.rows, ceil_div(t.cols, q.group_size), "quantization scales");
    else if (q.group_size == 0) scales = t.rows;
    std::int64_t bytes = ceil_div(checked_mul(elements, q.bits, "quantized bits"), 8);
    bytes += scales * q.scale_bytes + ceil_div(scales * q.zero_bits, 8) + q.tensor_bytes;
    if (q.second_level_scales) bytes += 4 * ceil_div(scales, 256);
    if (q.input_index) bytes += 4 * t.cols;
    return bytes;
}

namespace {
WeightSizing size_weights_of(const ModelSpec& spec, std::optional<Dtype> dtype_override);
}  // namespace

WeightSizing size_weights(const ModelSpec& spec, std::optional<Dtype> dtype_override) {
    // Every input is the config's (or --params): an overflow names the model.
    return overflow_blames(spec.name, [&] { return size_weights_of(spec, dtype_override); });
}

namespace {

WeightSizing size_weights_of(const ModelSpec& spec, std::optional<Dtype> dtype_override) {
    WeightSizing out;
    out.dtype = dtype_override.value_or(serving_dtype(spec.checkpoint_dtype));
    out.quantization = spec.quantization.method;

    if (spec.params.empty() && spec.params_override) {  // a hand-built model: --params only
        out.params = out.active_params = *spec.params_override;
        out.bytes = bytes_for(out.params, out.dtype);
        return out;
    }

    std::vector<WeightPart> parts;
    for (const ParamTensor& t : spec.params) {
        const std::int64_t elements = checked_mul(t.rows, t.cols, "tensor elements");
        const std::int64_t params = checked_mul(elements, t.copies, "parameter count");
        std::int64_t one = 0;
        if (auto q = quantized_bytes(t, spec.quantization)) one = *q;
        else one = bytes_for(elements, t.fixed_dtype.value_or(out.dtype));
        const std::int64_t bytes = checked_mul(one, t.copies, "weight bytes");

        std::int64_t active = params;
        if (t.part == ParamPart::Experts && spec.experts > 0)  // each token runs experts_per_token of experts
            active = params / spec.experts * spec.experts_per_token;

        out.params = checked_add(out.params, params, "parameter count");
        out.active_params = checked_add(out.active_params, active, "parameter count");
        out.bytes = checked_add(out.bytes, bytes, "weight bytes");
        auto it = std::find_if(parts.begin(), parts.end(), [&](const WeightPart& p) { return p.part == t.part; });
        if (it == parts.end()) parts.push_back(WeightPart{t.part, params, bytes});
        else { it->params += params; it->bytes += bytes; }
    }
    std::sort(parts.begin(), parts.end(), [](const WeightPart& a, const WeightPart& b) { return a.part < b.part; });
    out.parts = std::move(parts);
    if (spec.params_override) {  // --params with a config: the user's count wins, bytes scale with it
        out.bytes = bytes_for(*spec.params_override, out.dtype);
        out.params = out.active_params = *spec.params_override;
        out.parts.clear();
    }
    return out;
}

}  // namespace

}  // namespace kvplan
