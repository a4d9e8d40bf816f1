// Hugging Face config.json (already read and parsed) -> ModelSpec.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/model/model_spec.hpp"

namespace kvplan {

// `source` names the config in error messages and becomes the spec's name.
// Throws Error(Data) naming the field for a malformed, inconsistent or
// unsupported config.
// `tokenizer_max` is tokenizer_config.json's model_max_length, which vLLM
// also consults for the default max_model_len (max_len.hpp).
ModelSpec parse_model_config(const nlohmann::json& config, const std::string& source, std::optional<std::int64_t> tokenizer_max = std::nullopt);

// A model with no config file, from the shape alone (e.g. a 7B of 32 layers x
// 32 KV heads x 128): --layers --kv-heads --head-dim [--hidden --heads --params].
struct ManualShape {
    std::int64_t layers = 0;
    std::int64_t kv_heads = 0;
    std::int64_t head_dim = 0;
    std::int64_t hidden = 0;  // 0: kv_heads x head_dim (multi-head attention)
    std::int64_t heads = 0;   // 0: hidden / head_dim
    std::int64_t params = 0;  // 0: unknown (weights reported as 0)
    Dtype dtype = Dtype::Bf16;
    std::int64_t max_position_tokens = 0;
};
ModelSpec manual_model(const ManualShape& shape);

}  // namespace kvplan
