// The longest sequence an engine serves a model at by default: vLLM's derived
// max_model_len (vllm/config/model.py, _get_and_verify_max_len). kvplan uses
// it as the default --max-model-len and --context.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/config_reader.hpp"

namespace kvplan {

struct DerivedMaxLen {
    std::int64_t tokens = 0;  // 0: the config names no length
    std::string key;          // the field it came from, e.g. "max_position_embeddings"
    std::string note;         // set when RoPE scaling or the tokenizer changed it
};

// vLLM's rule, in its order:
//   1. the smallest of max_position_embeddings, n_positions, max_seq_len,
//      seq_length, model_max_length, max_target_positions,
//      max_sequence_length, max_seq_length, seq_len present; a
//      model_max_length (Command-R) then wins outright;
//   2. at most tokenizer_config.json's model_max_length (`tokenizer_max`);
//   3. RoPE scaling (rope_scaling, or transformers v5's rope_parameters,
//      also per layer type): unless the type is su, longrope or llama3, the
//      length is multiplied by its `factor` (default 1.0, null read as 1.0),
//      and for yarn the length multiplied is original_max_position_embeddings.
//      Gemma-3's max_position_embeddings is already scaled: skipped.
//   4. longrope (Phi-3 128k): the default is original_max_position_embeddings.
// Keys vLLM does not consult (n_ctx, max_context_length) are used only when
// none of its keys is present. `cfg` is the language model's config.
DerivedMaxLen derive_max_model_len(const ConfigReader& cfg, const std::string& model_type, std::optional<std::int64_t> tokenizer_max);

}  // namespace kvplan
