// ModelSpec: the one normalised description of a model that every later step
// (sizing, budgets, step cost) reads. The parser turns any config dialect into
// this; nothing downstream looks at `model_type` again. This mirrors vLLM's
// one-KVCacheSpec-per-layer design (vllm/v1/kv_cache_interface.py), which is
// what lets one loop over layers size every attention family.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace kvplan {

// What a layer keeps for each sequence while it decodes.
enum class LayerKind {
    Full,     // full causal attention: K and V for every context token
    Sliding,  // sliding-window attention: K and V for the last `window_tokens` tokens
    Chunked,  // chunked local attention (Llama-4): K and V for the current chunk only
    Mla,      // multi-head latent attention (DeepSeek-V2/V3): one compressed latent per token
    State,    // Mamba / linear attention: a fixed-size recurrent state per sequence
    Cross,    // cross-attention to encoder (image) tokens: nothing per context token
    None,     // no token mixing at all (Nemotron-H MLP-only layers)
};

const char* layer_kind_name(LayerKind kind);

struct LayerSpec {
    LayerKind kind = LayerKind::Full;
    std::int64_t kv_heads = 0;             // num_key_value_heads; e.g. 8 for Llama-3.1-8B (GQA)
    std::int64_t k_head_dim = 0;           // head_dim of K; e.g. 128
    std::int64_t v_head_dim = 0;           // head_dim of V; equal to K's in every current model but MLA
    std::int64_t window_tokens = 0;        // Sliding: sliding_window; Chunked: attention_chunk_size
    std::int64_t latent_dim = 0;           // Mla: kv_lora_rank + qk_rope_head_dim; e.g. 512 + 64
    std::int64_t conv_state_elements = 0;  // State: convolution window per sequence; e.g. 3 x 5120 (Mamba-2.8B)
    std::int64_t ssm_state_elements = 0;   // State: recurrent (SSM / delta-rule) state per sequence; e.g. 5120 x 16
    std::int64_t state_tp_unit = 1;        // State: the state splits across TP in this many shards at most (heads)
    // Mamba-2: n_groups, and the conv-state elements one group's B and C
    // rows add ((d_conv - 1) x 2 x d_state). vLLM replicates groups when TP
    // does not divide them (layer_state_bytes_per_gpu). 0: no groups.
    std::int64_t state_groups = 0;
    std::int64_t group_conv_elements = 0;

    bool operator==(const LayerSpec&) const = default;
};

// Which part of the model a tensor belongs to; drives MoE active-parameter
// counts and which tensors a quantization scheme converts.
enum class ParamPart { Embedding, Attention, Mlp, Experts, SharedExperts, Router, Norm, Head, Mixer };

const char* param_part_name(ParamPart part);

// One learned tensor, with how many copies of it the model holds (layers, or
// layers x experts). A matrix is [rows = out features, cols = in features].
struct ParamTensor {
    ParamPart part = ParamPart::Mlp;
    std::string name;                  // e.g. "q_proj"
    std::int64_t rows = 0;             // out features (or length of a vector)
    std::int64_t cols = 1;             // in features (1 for a vector)
    std::int64_t copies = 1;           // layers (x experts) that hold one
    bool linear = false;               // a projection weight a quantizer may convert
    std::optional<Dtype> fixed_dtype;  // stored in this dtype whatever the model's (e.g. fp32 biases)
    // 0: tensor parallelism splits it over any number of ranks. Otherwise over
    // at most this many, the ranks beyond holding replicas: the K and V
    // projections of kv_heads heads (engines give each rank one whole KV head
    // when TP exceeds them), MLA's down-projections (1: whole on every rank).
    // See param_count.cpp add_attention and add_mla.
    std::int64_t max_tp_split = 0;
    // The decoder layers that hold it, ascending, each `copies / layers.size()`
    // times (DeepSeek's dense MLP: layers 0-2; its experts: 3-60). Empty for a
    // tensor outside the layers (embedding, final norm, head) and for tensors
    // built without a layer plan; those are shared over the layers evenly
    // where a pipeline stage's share is wanted (layer_range_share, weights.hpp).
    std::vector<std::int64_t> layers;
};

// quantization_config's quant_method, as far as kvplan tells them apart.
enum class QuantMethod { None, Fp8, Gptq, Awq, Mxfp4, BitsAndBytes, CompressedTensors, ModelOpt, FbgemmFp8 };

const char* quant_method_name(QuantMethod method);

// How a quantized checkpoint stores one [rows = out, cols = in] weight, as
// far as its bytes go. Every scheme kvplan knows is one setting of these:
//   values        ceil(rows x cols x bits / 8)
//   scales        one per block (block_rows x block_cols), or per group of
//                 group_size inputs in each row, or per row (group_size 0),
//                 or one per tensor (group_size -1); scale_bytes each
//   zero points   zero_bits each, one per scale (asymmetric schemes)
//   extra         tensor_bytes per tensor (global scales, shape records) and,
//                 with input_index, one int32 per input column (GPTQ g_idx)
struct Quantization {
    QuantMethod method = QuantMethod::None;
    int bits = 16;                 // bits per stored weight value
    std::int64_t group_size = -1;  // inputs per scale; 0: one per row; -1: one per tensor
    std::int64_t block_rows = 0;   // > 0: one scale per block_rows x block_cols block
    std::int64_t block_cols = 0;
    int scale_bytes = 4;                // bytes per scale
    int zero_bits = 0;                  // bits per zero point; 0 when symmetric
    std::int64_t tensor_bytes = 0;      // fixed bytes per tensor
    bool input_index = false;           // GPTQ act-order g_idx: int32 per input column
    bool second_level_scales = false;   // bitsandbytes double quant: an fp32 scale per 256 scales
    std::vector<ParamPart> keep_parts;  // parts left unquantized (modules_to_not_convert, ignore)
    // The KV cache dtype the checkpoint was calibrated for, which vLLM uses for
    // --kv-cache-dtype auto: ModelOpt's kv_cache_quant_algo "FP8". nullopt: none.
    std::optional<Dtype> kv_cache_dtype;
};

// The weights as a checkpoint stores them, read from its files' headers
// (safetensors JSON headers, GGUF tensor infos) without reading the tensor
// data. When present and chosen (`use_stored_weights`), these bytes replace
// the formula's: they are what the engine loads.
struct StoredDtype {
    std::string dtype;        // as the file names it: "BF16", "F8_E4M3", "Q4_K", "I32"...
    std::int64_t params = 0;  // elements stored in this dtype (packed int4 counts as its I32 words' elements)
    std::int64_t bytes = 0;
};

struct StoredWeights {
    std::string source;  // e.g. "4 safetensors files" or "model.gguf"
    std::int64_t files = 0;
    std::int64_t tensors = 0;
    std::int64_t params = 0;            // elements over every tensor, scales and indices included
    std::int64_t bytes = 0;             // stored tensor bytes, every tensor (headers excluded)
    std::vector<StoredDtype> by_dtype;  // largest first
    // Bytes of the tensors that are not per-layer, classified by name, so
    // pipeline stages and the decode step split the stored bytes as the
    // formula's parts: the token embedding, the output head, routed experts.
    std::int64_t embedding_bytes = 0;
    std::int64_t head_bytes = 0;
    std::int64_t expert_bytes = 0;
    // Tensors the engine does not load for the language model: MTP / draft
    // layers vLLM skips (DeepSeek-V3's layer 61). Part of `bytes`; the
    // engine loads bytes - skipped_bytes.
    std::int64_t skipped_bytes = 0;
    std::int64_t skipped_params = 0;
};

// How --model resolved (io/model_loader): what a baseline records so that
// `check` can say when a model resolves differently, or its config changed.
enum class ModelSourceKind {
    Manual,   // hand-built flags (--layers --kv-heads --head-dim)
    Preset,   // a bundled preset, by name or by the repo id it was copied from
    HfCache,  // a Hugging Face repo id found in the local HF cache
    File,     // a config.json path (or a weights file beside one)
    Folder,   // a model folder (a cache entry folder given as a path, too)
    Gguf,     // a llama.cpp GGUF file
};

// "manual", "preset", "hf_cache", "file", "folder", "gguf": as baselines write it.
const char* model_source_name(ModelSourceKind kind);
std::optional<ModelSourceKind> parse_model_source(const std::string& name);

struct ModelSource {
    ModelSourceKind kind = ModelSourceKind::Manual;
    std::string repo_id;        // "meta-llama/Llama-3.1-8B-Instruct": the cache entry's (as its folder spells it) or the preset's hf_id
    std::string revision;       // the snapshot folder's name, a commit hash; e.g. "0e9e39f249a16976918f6564b8830bc894c89659"
    std::string ref;            // "main" when refs/main named that snapshot; "" otherwise
    std::string path;           // the config (or GGUF) file read; "" for a preset
    std::string config_sha256;  // of the config bytes as read (hex); "" when not hashed (GGUF, manual)
};

struct ModelSpec {
    std::string name;          // preset name, file path, HF repo id (cache hit), or "manual"
    std::string model_type;    // config's model_type; e.g. "llama"
    std::string architecture;  // architectures[0]; e.g. "LlamaForCausalLM"

    std::int64_t hidden = 0;                // hidden_size / n_embd / d_model; e.g. 4096
    std::int64_t heads = 0;                 // num_attention_heads / n_head; e.g. 32 (0 for pure SSMs)
    std::int64_t head_dim = 0;              // query head_dim; e.g. 128
    std::int64_t vocab = 0;                 // vocab_size; e.g. 128256
    std::int64_t intermediate = 0;          // intermediate_size (dense MLP); e.g. 14336
    std::int64_t max_position_tokens = 0;   // max_position_embeddings; the default --context
    std::optional<Dtype> checkpoint_dtype;  // torch_dtype / dtype; nullopt when absent
    bool tied_embeddings = false;           // tie_word_embeddings (after the family default)
    std::int64_t experts = 0;               // routed experts per MoE layer (0: dense)
    std::int64_t experts_per_token = 0;

    std::vector<LayerSpec> layers;                // one per decoder layer, in order
    std::vector<ParamTensor> params;              // every learned tensor of the language model
    std::optional<std::int64_t> params_override;  // --params for a hand-built model without tensors
    Quantization quantization;
    std::optional<StoredWeights> stored_weights;  // from the checkpoint's files, when read
    bool use_stored_weights = true;               // --weights-from files (default) or formula
    // The KV cache dtype the model's engine uses by default when its file
    // format says which engine: f16 for a GGUF (llama.cpp's --cache-type-k/-v
    // default). nullopt: vLLM's rule (auto_kv_dtype).
    std::optional<Dtype> engine_kv_dtype;

    ModelSource source;  // how --model resolved; filled by io/model_loader

    std::vector<std::string> notes;     // decisions a reader should know about (language model only, MTP skipped...)
    std::vector<std::string> warnings;  // things in the input that look wrong but do not stop the plan (missing shards)
};

// What `--kv-dtype auto` means for this model: the checkpoint's declared KV
// cache dtype when its quantization names one, else the engine's default for
// the file format (engine_kv_dtype), else the serving dtype.
Dtype auto_kv_dtype(const ModelSpec& spec);

}  // namespace kvplan
