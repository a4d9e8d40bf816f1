#include "core/model/weights.hpp"

#include <algorithm>
#include <map>

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

// Scales each layer's bytes by stored / formula, rounding down: the part's
// rounding stays unplaced (LayerAmounts).
void scale_layers(std::vector<std::int64_t>& by_layer, std::int64_t stored, std::int64_t formula) {
    for (std::int64_t& b : by_layer)
        b = formula > 0 ? static_cast<std::int64_t>(static_cast<double>(b) * static_cast<double>(stored) / static_cast<double>(formula)) : 0;
}

// The stored bytes in place of the formula's (see weights.hpp).
void use_stored(const StoredWeights& s, bool unquantized, WeightSizing& out) {
    const std::int64_t loaded = s.bytes - s.skipped_bytes;
    std::map<ParamPart, std::int64_t> formula_bytes;  // each part's, before the stored bytes replace them
    for (const WeightPart& p : out.parts) formula_bytes[p.part] = p.bytes;
    out.from_files = true;
    out.bytes = loaded;
    if (unquantized) out.params = s.params - s.skipped_params;
    // Parts named in the file keep their stored bytes; the per-layer rest is
    // shared in the formula's proportions. A named part the formula lacks
    // (an lm_head stored beside tied embeddings) joins the rest.
    std::int64_t named = 0, rest_formula = 0;
    for (const WeightPart& p : out.parts) {
        if (p.part == ParamPart::Embedding) named += s.embedding_bytes;
        else if (p.part == ParamPart::Head) named += s.head_bytes;
        else if (p.part == ParamPart::Experts) named += s.expert_bytes;
        else rest_formula += p.bytes;
    }
    const std::int64_t rest = std::max<std::int64_t>(0, loaded - named);
    std::int64_t shared = 0;
    WeightPart* last_rest = nullptr;
    for (WeightPart& p : out.parts) {
        if (p.part == ParamPart::Embedding) p.bytes = s.embedding_bytes;
        else if (p.part == ParamPart::Head) p.bytes = s.head_bytes;
        else if (p.part == ParamPart::Experts) p.bytes = s.expert_bytes;
        else {
            // rest x (this part's share of the formula's rest), in doubles: the product overflows int64 for 1T models.
            const std::int64_t formula = p.bytes;
            p.bytes = rest_formula > 0
                          ? static_cast<std::int64_t>(static_cast<double>(rest) * static_cast<double>(p.bytes) / static_cast<double>(rest_formula))
                          : 0;
            // The capped tensors keep their share of the part.
            for (CappedShare& c : p.capped)
                if (formula > 0)
                    c.bytes = static_cast<std::int64_t>(static_cast<double>(c.bytes) * static_cast<double>(p.bytes) / static_cast<double>(formula));
            shared += p.bytes;
            last_rest = &p;
        }
    }
    if (last_rest) last_rest->bytes += rest - shared;  // the rounding, so the parts add up to the stored bytes
    // Each layer keeps its share of its part's stored bytes.
    for (WeightPart& p : out.parts) {
        const auto f = formula_bytes.find(p.part);
        if (f == formula_bytes.end()) continue;
        scale_layers(p.by_layer.bytes, p.bytes, f->second);
        for (CappedShare& c : p.capped) scale_layers(c.by_layer.bytes, p.bytes, f->second);
    }
}

}  // namespace

CappedShare& capped_share(WeightPart& part, std::int64_t max_split) {
    for (CappedShare& c : part.capped)
        if (c.max_split == max_split) return c;
    part.capped.push_back(CappedShare{max_split, 0, 0, {}});
    return part.capped.back();
}

bool splits_fewer(const CappedShare& c, std::int64_t tp) {
    return c.max_split >= 1 && c.max_split < tp;
}

std::int64_t layer_range_amount(std::int64_t total, const std::vector<std::int64_t>& by_layer, std::int64_t first, std::int64_t count,
                                std::int64_t layers) {
    if (first <= 0 && count >= layers) return total;
    std::int64_t placed = 0, in_range = 0;
    for (std::size_t i = 0; i < by_layer.size(); ++i) {
        placed = checked_add(placed, by_layer[i], "weight bytes");
        const auto layer = static_cast<std::int64_t>(i);
        if (layer >= first && layer < first + count) in_range = checked_add(in_range, by_layer[i], "weight bytes");
    }
    const std::int64_t rest = std::max<std::int64_t>(0, total - placed);
    return checked_add(in_range, ceil_div(checked_mul(rest, count, "stage weight bytes"), std::max<std::int64_t>(1, layers)), "stage weight bytes");
}

WeightPart layer_range_share(const WeightPart& part, std::int64_t first, std::int64_t count, std::int64_t layers) {
    WeightPart out{part.part,
                   layer_range_amount(part.params, part.by_layer.params, first, count, layers),
                   layer_range_amount(part.bytes, part.by_layer.bytes, first, count, layers),
                   {},
                   {}};
    for (const CappedShare& c : part.capped)
        out.capped.push_back(CappedShare{c.max_split,
                                         layer_range_amount(c.params, c.by_layer.params, first, count, layers),
                                         layer_range_amount(c.bytes, c.by_layer.bytes, first, count, layers),
                                         {}});
    return out;
}

WeightSizing size_weights(const ModelSpec& spec, std::optional<Dtype> dtype_override) {
    // Every input is the config's (or --params): an overflow names the model.
    return overflow_blames(spec.name, [&] { return size_weights_of(spec, dtype_override); });
}

namespace {

// Adds each of t's layers' copies (copies / its layer count, a remainder left
// unplaced) of `elements` parameters and `one` bytes a copy to `a`.
void place_in_layers(LayerAmounts& a, const ParamTensor& t, std::int64_t elements, std::int64_t one, std::int64_t layers) {
    if (t.layers.empty()) return;
    const std::int64_t per_layer = t.copies / static_cast<std::int64_t>(t.layers.size());
    if (a.bytes.empty()) {
        a.params.assign(static_cast<std::size_t>(layers), 0);
        a.bytes.assign(static_cast<std::size_t>(layers), 0);
    }
    for (std::int64_t layer : t.layers) {
        if (layer < 0 || layer >= layers) continue;  // not one of the spec's layers: stays unplaced
        const auto i = static_cast<std::size_t>(layer);
        a.params[i] = checked_add(a.params[i], checked_mul(elements, per_layer, "parameter count"), "parameter count");
        a.bytes[i] = checked_add(a.bytes[i], checked_mul(one, per_layer, "weight bytes"), "weight bytes");
    }
}

WeightSizing size_weights_of(const ModelSpec& spec, std::optional<Dtype> dtype_override) {
    WeightSizing out;
    out.dtype = dtype_override.value_or(serving_dtype(spec.checkpoint_dtype));
    out.quantization = spec.quantization.method;

    if (spec.params.empty() && spec.params_override) {  // a hand-built model: --params only
        out.params = out.active_params = *spec.params_override;
        out.bytes = bytes_for(out.params, out.dtype);
        return out;
    }

    const auto layers = static_cast<std::int64_t>(spec.layers.size());
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
        if (it == parts.end()) it = parts.insert(parts.end(), WeightPart{t.part, 0, 0, {}, {}});
        it->params += params;
        it->bytes += bytes;
        place_in_layers(it->by_layer, t, elements, one, layers);
        if (t.max_tp_split > 0) {
            CappedShare& c = capped_share(*it, t.max_tp_split);
            c.params += params;
            c.bytes += bytes;
            place_in_layers(c.by_layer, t, elements, one, layers);
        }
    }
    std::sort(parts.begin(), parts.end(), [](const WeightPart& a, const WeightPart& b) { return a.part < b.part; });
    out.parts = std::move(parts);
    if (spec.params_override) {  // --params with a config: the user's count wins, bytes scale with it
        out.bytes = bytes_for(*spec.params_override, out.dtype);
        out.params = out.active_params = *spec.params_override;
        out.parts.clear();
    }
    out.formula_params = out.params;
    out.formula_bytes = out.bytes;
    if (spec.stored_weights && spec.use_stored_weights && !dtype_override && !spec.params_override)
        use_stored(*spec.stored_weights, spec.quantization.method == QuantMethod::None, out);
    return out;
}

}  // namespace

}  // namespace kvplan
