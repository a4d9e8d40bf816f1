// Parameter counts and weight bytes, from the ModelSpec's tensor list and its
// quantization. One place, so that weight bytes, MoE active parameters and
// per-GPU splits all agree.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/model/model_spec.hpp"

namespace kvplan {

// What each decoder layer holds of an amount, from the tensors that name
// their layers (ParamTensor::layers): one entry per decoder layer, or empty
// when no tensor names its layers. The amount beyond their sum (a final norm,
// tensors built without a layer plan) belongs to no layer in particular.
struct LayerAmounts {
    std::vector<std::int64_t> params;
    std::vector<std::int64_t> bytes;
};

// A part's tensors that TP splits over at most `max_split` ranks
// (ParamTensor::max_tp_split), summed by that limit.
struct CappedShare {
    std::int64_t max_split = 1;
    std::int64_t params = 0;
    std::int64_t bytes = 0;
    LayerAmounts by_layer;
};

// True when TP over `tp` ranks splits `c`'s tensors over fewer ranks than
// it has (the rest hold replicas).
bool splits_fewer(const CappedShare& c, std::int64_t tp);

struct WeightPart {
    ParamPart part;
    std::int64_t params = 0;
    std::int64_t bytes = 0;
    std::vector<CappedShare> capped;  // of params and bytes, by max_split
    LayerAmounts by_layer;            // of params and bytes
};

// The entry of `part.capped` for `max_split`, added empty if missing.
CappedShare& capped_share(WeightPart& part, std::int64_t max_split);

// Of `total`, what layers [first, first + count) of the model's `layers` hold:
// their entries of `by_layer`, plus the unplaced rest (total - sum) in
// proportion to `count`, rounded up. The whole `total` when the range covers
// every layer.
std::int64_t layer_range_amount(std::int64_t total, const std::vector<std::int64_t>& by_layer, std::int64_t first, std::int64_t count,
                                std::int64_t layers);

// `part` as held by layers [first, first + count): params, bytes and each
// capped share by layer_range_amount; by_layer left empty. A pipeline
// stage's share: DeepSeek-V3's first stage holds its 3 dense MLPs and fewer
// experts than a later stage of as many layers.
WeightPart layer_range_share(const WeightPart& part, std::int64_t first, std::int64_t count, std::int64_t layers);

struct WeightSizing {
    std::int64_t params = 0;         // learned parameters of the language model
    std::int64_t active_params = 0;  // per token: routed experts scaled by experts_per_token / experts
    std::int64_t bytes = 0;          // as served: quantized tensors plus their scales, the rest in `dtype`
    Dtype dtype = Dtype::Bf16;       // dtype of unquantized tensors
    QuantMethod quantization = QuantMethod::None;
    std::vector<WeightPart> parts;  // by part, in ParamPart order, parts with no parameters omitted
    // What the config's formula gives; equal to params and bytes unless the
    // checkpoint's stored bytes were used (from_files).
    std::int64_t formula_params = 0;
    std::int64_t formula_bytes = 0;
    bool from_files = false;
};

// With the checkpoint's stored weights (spec.stored_weights, when
// spec.use_stored_weights and no dtype_override), bytes are the stored bytes
// the engine loads, params the stored elements for an unquantized checkpoint
// (a quantized one packs several values per stored element, so the formula's
// count stays), and the parts' bytes are the stored ones: the embedding, head
// and experts as classified by tensor name, the rest shared in the formula's
// proportions.
// `dtype_override` forces unquantized tensors (and, without a quantization
// config, every tensor) to that dtype; default: the serving dtype (see dtype.hpp).
WeightSizing size_weights(const ModelSpec& spec, std::optional<Dtype> dtype_override = std::nullopt);

// Bytes of one copy of `tensor` under `q`, or nullopt if `q` leaves it alone.
std::optional<std::int64_t> quantized_bytes(const ParamTensor& tensor, const Quantization& q);

}  // namespace kvplan
