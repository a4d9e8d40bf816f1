// Internal to the config parser: the intermediate values the three parsing
// steps pass along (dims -> layer plan -> parameter tensors). Kept in one
// header so that each step's file reads on its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config_reader.hpp"
#include "core/model/model_spec.hpp"

namespace kvplan {

// Field limits: generous for any real model, small enough that every product
// of a handful of them stays far inside 64 bits.
constexpr std::int64_t kMaxLayers = 10'000;
constexpr std::int64_t kMaxHidden = 1'000'000;
constexpr std::int64_t kMaxHeads = 100'000;
constexpr std::int64_t kMaxVocab = 100'000'000;
constexpr std::int64_t kMaxTokens = 1'000'000'000;  // contexts, windows, positions
constexpr std::int64_t kMaxExperts = 100'000;

// What a block's token mixer is; decides its parameters (LayerSpec decides its cache).
// Linear: a single hidden x hidden matrix standing in for the block (DeciLM replace_with_linear).
enum class Mixer { Attention, Mla, Cross, Mamba1, Mamba2, GatedDeltaNet, Linear, None };
// What a block's feed-forward part is.
enum class Ffn { Dense, Moe, Linear, None };

struct LayerPlan {
    LayerSpec spec;
    Mixer mixer = Mixer::Attention;
    Ffn ffn = Ffn::Dense;
    std::int64_t heads = 0;         // query heads of this layer when they vary (OpenELM); 0: the model's
    std::int64_t intermediate = 0;  // MLP width of this layer when it varies (DeciLM, OpenELM); 0: the model's
};

// Family shape rules the config does not spell out: how transformers builds
// the block for this model_type (norm kind, MLP kind, biases). Config flags
// such as attention_bias or mlp_bias override these when present.
struct FamilyTraits {
    bool gated_mlp = true;                  // gate + up + down (SwiGLU/GeGLU); else up + down
    bool layer_norm = false;                // LayerNorm (weight + bias); else RMSNorm (weight)
    int norms_per_layer = 2;                // input + post-attention; Gemma-2/3 have 4; parallel blocks 1
    bool qkv_bias = false;                  // biases on q, k, v (Qwen2, GPT-2)
    bool o_bias = false;                    // bias on the output projection
    bool mlp_bias = false;                  // biases on the MLP projections
    bool qk_norm = false;                   // per-head q_norm/k_norm (Qwen3, Gemma-3)
    bool learned_positions = false;         // a position-embedding table (GPT-2, GPT-BigCode)
    bool lm_head_bias = false;              // GPT-J's lm_head has a bias
    bool tie_default = false;               // the config class's tie_word_embeddings default
    bool attention_sinks = false;           // gpt-oss: one learned sink logit per head
    bool gated_attention = false;           // Qwen3-Next: q_proj also emits a per-head output gate (2x rows)
    std::int64_t extra_embedding_rows = 0;  // mllama: 8 image-token rows beyond vocab_size
};

struct ModelDims {
    std::string model_type;
    std::int64_t layers = 0;
    std::int64_t hidden = 0;
    std::int64_t heads = 0;
    std::int64_t kv_heads = 0;
    std::int64_t head_dim = 0;
    std::int64_t vocab = 0;
    std::int64_t intermediate = 0;
    std::int64_t experts = 0;
    std::int64_t experts_per_token = 0;
    FamilyTraits traits;
    // Per-layer lists, when the config gives them (OpenELM): empty otherwise.
    std::vector<std::int64_t> layer_heads;
    std::vector<std::int64_t> layer_kv_heads;
};

FamilyTraits family_traits(const std::string& model_type, const ConfigReader& cfg);

// Whether family_traits has rules for this model_type (others get a
// Llama-style block, and the spec's notes say so).
bool known_family(const std::string& model_type);

// Step 2: one LayerPlan per layer (attention kind, window, state size, mixer, FFN).
std::vector<LayerPlan> plan_layers(const ConfigReader& cfg, const ModelDims& dims);

// Step 3: every learned tensor of the language model.
std::vector<ParamTensor> count_params(const ConfigReader& cfg, const ModelDims& dims, const std::vector<LayerPlan>& plan, bool tied,
                                      std::vector<std::string>& notes);

// quantization_config (read from the top-level config).
Quantization parse_quantization(const ConfigReader& top);

}  // namespace kvplan
