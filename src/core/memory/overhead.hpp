// What an engine holds on a GPU besides weights and the KV cache, estimated
// term by term when the user does not give --overhead. Each term carries its
// formula, the range it was measured in and the source; the derivation is in
// docs/concurrency.md ("Runtime overhead").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/memory/engine.hpp"
#include "core/model/model_spec.hpp"

namespace kvplan {

struct OverheadTerm {
    std::string name;            // e.g. "activation peak"
    std::int64_t bytes = 0;      // kvplan's estimate
    std::int64_t low_bytes = 0;  // the range it stands for
    std::int64_t high_bytes = 0;
    std::string basis;   // the formula with this model's numbers
    std::string source;  // where the formula and range come from
    // Whether the engine takes it out of the KV pool. SGLang keeps the
    // activation peak in the (1 - mem_fraction_static) headroom; vLLM
    // captures CUDA graphs after sizing the pool.
    bool in_pool = true;
    // Held by the last pipeline stage only: the logits and the sampler run
    // there alone (vLLM V1 profile_run: _dummy_sampler_run under
    // get_pp_group().is_last_rank; V0's execute_model returns intermediate
    // tensors elsewhere).
    bool last_stage_only = false;
};

// Which top-k/top-p implementation vLLM V1's dummy sampler run goes
// through; it sets the bytes the sampler allocates per (row x vocab entry).
enum class VllmSampler {
    // apply_top_k_top_p_pytorch: a full sort of the fp32 logits (vLLM up to
    // 0.16.0, and what llm-d's H100 table measured). kvplan's default.
    PyTorchSort,
    // apply_top_k_top_p_triton, in place, for batches of 8 rows or more
    // (vLLM 0.16.1 and later, vllm PR #33538).
    Triton,
};

// Where a vLLM release puts the CUDA-graph memory profile (vllm_release.hpp).
enum class VllmGraphProfile {
    None,                // graphs are captured after the pool is sized (compile_or_warm_up_model)
    ProfiledDiscarded,   // profiled inside memory_profiling(), the estimate logged and discarded
    EstimateSubtracted,  // profiled and the estimate subtracted from the pool
};

struct OverheadInputs {
    Engine engine = Engine::Generic;
    std::int64_t tp = 1;
    std::int64_t max_batched_tokens = 8192;  // tokens in the profiling forward pass
    std::int64_t max_num_seqs = 1024;        // vLLM max_num_seqs; the sampler rows are min(this, max_batched_tokens)
    VllmSampler sampler = VllmSampler::PyTorchSort;
    // Hopper-class GPU: PyTorch gives cuBLAS a 32 MiB workspace there, 8.1 MiB elsewhere.
    bool hopper = false;
    std::int64_t world = 0;  // GPUs in the step's collectives (DP attention + EP); 0: tp
    // --vllm-version named a release: its rules replace kvplan's cautious
    // defaults (non-torch memory as the source measures it, the rotary cache
    // counted with the weights, the release's CUDA-graph profile).
    bool vllm_release = false;
    VllmGraphProfile graph_profile = VllmGraphProfile::None;
    bool enforce_eager = false;  // --enforce-eager: no graphs, no graph profile
    bool weights_given = false;  // --weights: what vLLM logged it loaded, rotary cache included
};

// What vLLM V1's profile_run holds at its torch peak, from the code
// (docs/concurrency.md, "Runtime overhead"): the forward pass's activation
// peak, or, once the forward has returned, the hidden states it keeps plus
// the dummy sampler's buffers, whichever is larger.
struct VllmProfilePeak {
    std::int64_t forward_bytes = 0;        // the forward pass's activation peak
    std::int64_t sampler_rows = 0;         // min(max_num_seqs, max_batched_tokens)
    std::int64_t hidden_states_bytes = 0;  // all tokens' hidden states + the sampled rows' (and their random copy)
    std::int64_t sampler_bytes = 0;        // the sampler's peak over rows x vocab
    std::int64_t bytes_per_entry = 0;      // of sampler_bytes, per row per vocabulary entry
    std::int64_t triton_buffer_bytes = 0;  // the Triton top-k/top-p kernel's per-program buffer
    std::int64_t peak_bytes() const;       // max(forward, hidden states + sampler)
};

VllmProfilePeak vllm_profile_peak(const ModelSpec& spec, const OverheadInputs& in);

// PyTorch's cuBLAS workspace (aten/src/ATen/cuda/CublasHandlePool.cpp
// getChosenWorkspaceSize): 4096 KiB x 8 on Hopper, 4096 KiB x 2 + 16 KiB x 8
// elsewhere, allocated by the caching allocator at the first GEMM.
std::int64_t cublas_workspace_bytes(bool hopper);

// Whether a device is a Hopper (compute capability 9.0) part, from its
// database id: h100-*, h200, h20, gh200.
bool hopper_gpu(const Gpu& gpu);

// The top-k/top-p path a vLLM release's dummy sampler takes: the Triton
// kernel from 0.16.1 on (vllm PR #33538), PyTorch's sort before.
VllmSampler vllm_sampler_for_version(int major, int minor, int patch);

std::vector<OverheadTerm> estimate_overhead(const ModelSpec& spec, const OverheadInputs& in);

// The decode path's copy of MLA's kv_b_proj that vLLM and SGLang keep beside
// it (the prefill path still runs kv_b_proj), for the MLA layers among
// [first_layer, first_layer + layers), each split over `attention_tp` with
// the heads:
//   vLLM V1: W_UK_T and W_UV, copies of a quantized kv_b_proj dequantized
//     to the serving dtype (MLACommonImpl.process_weights_after_loading:
//     "we just store fp16/bf16 copies"); views of an unquantized one, so
//     nothing.
//   SGLang: w_kc and w_vc, contiguous copies of every kv_b_proj
//     (DeepseekV2ForCausalLM.post_load_weights): in the serving dtype, but
//     1 B a value for fp8 without 128 x 128 blocks (requantized per tensor).
//   TensorRT-LLM: k_b_proj_trans, the K half transposed, a parameter of its
//     own (MLA.create_weights in _torch/modules/attention.py): fp8 with
//     its 128 x 128 block scales when kv_b_proj has them, else the serving
//     dtype; v_b_proj is a view of kv_b_proj.weight, so nothing.
// nullopt for other engines and models without MLA. The engines measure it
// with the weights they load, before sizing the pool.
std::optional<OverheadTerm> mla_decode_copy_term(const ModelSpec& spec, Engine engine, std::int64_t first_layer, std::int64_t layers,
                                                 std::int64_t attention_tp);

// Widest per-token MLP activation of a layer on one rank: the dense
// intermediate size, or for MoE the routed experts' intermediate x experts
// per token (+ shared experts), divided by TP.
std::int64_t activation_width(const ModelSpec& spec, std::int64_t tp);

}  // namespace kvplan
