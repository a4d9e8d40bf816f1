#include "core/memory/overhead.hpp"

#include <algorithm>

#include "core/checked.hpp"
#include "core/digits.hpp"
#include "core/model/weights.hpp"

namespace kvplan {

namespace {

std::int64_t gib(double g) {
    return static_cast<std::int64_t>(g * 1073741824.0 + 0.5);
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Rows of the first `up_proj` weight in `part` (the MLP's intermediate size), or 0.
std::int64_t up_rows(const ModelSpec& spec, ParamPart part) {
    std::int64_t rows = 0;
    for (const ParamTensor& t : spec.params)
        if (t.part == part && t.linear && ends_with(t.name, "up_proj")) rows = std::max(rows, t.rows);
    return rows;
}

}  // namespace

std::int64_t activation_width(const ModelSpec& spec, std::int64_t tp) {
    std::int64_t dense = up_rows(spec, ParamPart::Mlp);
    std::int64_t routed = up_rows(spec, ParamPart::Experts);
    std::int64_t moe = checked_add(checked_mul(routed, std::max<std::int64_t>(1, spec.experts_per_token)), up_rows(spec, ParamPart::SharedExperts));
    std::int64_t width = std::max(dense, moe);
    if (width == 0) width = spec.intermediate > 0 ? spec.intermediate : 4 * spec.hidden;  // hand-built shapes: the classic 4h MLP
    return ceil_div(width, tp);
}

namespace {

// Bytes the dummy sampler holds per (row x vocabulary entry) at its peak, and
// why. vllm/v1/worker/gpu_model_runner.py _dummy_sampler_run computes bf16
// logits (2 B, kept by the caller) and samples them with temperature 0.5,
// top_p 0.9 and top_k vocab-1, no logprobs; vllm/v1/sample/sampler.py
// Sampler.forward copies them to fp32 (4 B). Then:
//   PyTorch path (vllm/v1/sample/ops/topk_topp_sampler.py
//   apply_top_k_top_p_pytorch): logits.sort() returns fp32 values (4 B) and
//   int64 indices (8 B); for 128 rows or more PyTorch's segmented sort
//   (aten/src/ATen/native/cuda/SortStable.cu segmented_sort_pairs) adds int64
//   reverse indices (8 B) and cub's alternate key and value buffers (4 + 8 B):
//   2 + 4 + 4 + 8 + 8 + 12 = 38 B. From 2 to 127 rows it sorts the whole
//   batch at once (segmented_sort_pairs_by_full_sort: two int2 index arrays
//   8 + 8 B, a key copy 4 B, cub's alternates 4 + 8 B): 50 B; one row: 18 B.
//   The masks, softmax and cumsum that follow hold less than the sort.
//   Triton path (vllm/v1/sample/ops/topk_topp_triton.py, 8 rows or more):
//   masks the fp32 logits in place; then forward_native's softmax (4 B) and
//   random_sample's exponential noise q (4 B): 2 + 4 + 4 + 4 = 14 B.
std::int64_t sort_bytes_per_entry(std::int64_t rows) {
    if (rows >= 128) return 38;
    if (rows >= 2) return 50;
    return 18;
}

// The Triton kernel's per-program buffer, [min(SMs, rows) rounded up to a
// power of two, at most SMs] x vocab x 4 B, cached for the process
// (apply_top_k_top_p_triton). kvplan has no SM counts: 128 (an RTX 4090's;
// an H100 has 132) stands for them.
constexpr std::int64_t kTritonPrograms = 128;

std::int64_t triton_buffer_rows(std::int64_t rows) {
    std::int64_t p = 1;
    while (p < std::min(rows, kTritonPrograms)) p *= 2;
    return std::min(p, kTritonPrograms);
}

// vLLM pads the LM head's vocabulary to a multiple of 64
// (vllm/model_executor/layers/vocab_parallel_embedding.py DEFAULT_VOCAB_PADDING_SIZE).
std::int64_t padded_vocab(std::int64_t vocab) {
    return ceil_div(vocab, 64) * 64;
}

OverheadTerm non_torch_term(const OverheadInputs& in) {
    // Memory outside PyTorch's allocator that appears while the engine
    // starts: cuBLAS/cuDNN handles, loaded kernels, NCCL buffers under TP.
    // Measured 0.03-0.35 GiB on one GPU (vllm#13882 0.03, vllm#12330 0.10,
    // llm-d H100 0.13-0.14, vllm#10517 0.35; vLLM PR #10511 logged 1.79) and
    // 0.54-0.55 GiB at TP 2 (llm-d). kvplan plans with the top of the
    // single-GPU range, 0.35 GiB, since an under-estimate is an OOM, plus
    // the 0.42 GiB TP 2 measured for NCCL.
    OverheadTerm t;
    t.name = "non-torch memory (cuBLAS/NCCL workspaces)";
    // With DP attention and EP the collectives span `world` GPUs even at attention TP 1.
    const bool nccl = (in.world > 0 ? in.world : in.tp) > 1;
    if (in.vllm_release) {
        // A named release: vLLM takes its baseline snapshot after the CUDA
        // context and the process group exist (gpu_worker.py init_device:
        // init_snapshot after init_worker_distributed_environment), and
        // PyTorch allocates the cuBLAS workspace through its caching
        // allocator, so on one GPU non_torch_increase (mem_utils.py
        // memory_profiling) has nothing of kvplan's to count. The ten RTX 3090
        // logs of vLLM 0.17.1 check it: -0.04 to +0.07 GiB, mean 0.01 GiB.
        t.bytes = nccl ? gib(0.42) : 0;
        t.low_bytes = nccl ? gib(0.54) : -gib(0.04);
        t.high_bytes = nccl ? gib(0.55) : gib(0.14);
        t.basis = nccl ? "0.42 GiB for NCCL at TP > 1" : "0 on one GPU (vLLM's baseline follows the CUDA context)";
        t.source = "vllm/v1/worker/gpu_worker.py init_device, vllm/utils/mem_utils.py memory_profiling; RTX 3090 vLLM 0.17.1 logs";
        return t;
    }
    t.bytes = gib(0.35) + (nccl ? gib(0.42) : 0);
    t.low_bytes = nccl ? gib(0.54) : gib(0.03);
    t.high_bytes = gib(1.79) + (nccl ? gib(0.42) : 0);
    t.basis = nccl ? (in.tp > 1 ? "0.35 GiB + 0.42 GiB for NCCL at TP > 1" : "0.35 GiB + 0.42 GiB for NCCL (DP/EP group)") : "0.35 GiB";
    t.source = "measured: llm-d empirical-vllm-memory-results (H100), vllm#10517, vllm#12330, vllm#13882, vllm PR #10511";
    return t;
}

// The activation peak of the profiling forward pass over
// max_num_batched_tokens: the MLP's gate/up output and activation (3 x
// intermediate per token) plus about three hidden-size buffers (residual,
// norm output, attention output), 16-bit. Fit: Llama-3.1-8B on vLLM V0
// measured 2.07 GiB at 20,000 tokens and 2.99 GiB at 29,000 (vllm#10517:
// peak_torch_memory - weights), i.e. 107 KiB/token; (3 x 14,336 + 3 x 4,096)
// x 2 B = 110,592 B/token.
OverheadTerm activation_term(const ModelSpec& spec, const OverheadInputs& in) {
    const std::int64_t width = activation_width(spec, in.tp);
    const std::int64_t per_token = checked_mul(checked_add(checked_mul(3, width), checked_mul(3, spec.hidden)), 2, "activation bytes");
    OverheadTerm t;
    t.name = "activation peak (profiling forward pass)";
    t.bytes = checked_mul(in.max_batched_tokens, per_token, "activation bytes");
    t.low_bytes = t.bytes * 85 / 100;
    t.high_bytes = t.bytes * 115 / 100;
    t.basis =
        group_digits(in.max_batched_tokens) + " batched tokens x (3 x " + group_digits(width) + " + 3 x " + group_digits(spec.hidden) + ") x 2 B";
    t.source = "fit to vllm#10517 (V0, 20,000 and 29,000 tokens), within 15%";
    t.in_pool = in.engine != Engine::Sglang;
    return t;
}

// vLLM V1 (and the generic engine, which budgets like it): the profile's
// torch peak is max(forward, hidden states + sampler), not their sum
// (profile_run frees the forward's intermediates before the sampler runs
// and keeps only hidden_states). The forward part is the activation term;
// this term is what the sampler side adds beyond it, so the two sum to the
// peak.
OverheadTerm v1_sampler_term(const VllmProfilePeak& peak, const OverheadInputs& in, std::int64_t vocab) {
    OverheadTerm t;
    t.name = "logits and sampler buffers";
    t.bytes = std::max<std::int64_t>(0, peak.peak_bytes() - peak.forward_bytes);
    t.low_bytes = t.bytes * 95 / 100;
    t.high_bytes = t.bytes * 105 / 100;
    const bool triton = peak.triton_buffer_bytes > 0;
    t.basis = "max(0, " + group_digits(peak.sampler_rows) + " rows x " + group_digits(vocab) + " vocab x " + std::to_string(peak.bytes_per_entry) +
              " B" + (triton ? " + " + group_digits(peak.triton_buffer_bytes) + " B Triton buffer" : std::string()) + " + " +
              group_digits(peak.hidden_states_bytes) + " B hidden states - forward peak)";
    t.source = triton ? "vLLM >= 0.16.1 _dummy_sampler_run: bf16 + fp32 logits, Triton top-k/top-p in place, softmax, noise"
                      : "vLLM V1 _dummy_sampler_run: bf16 + fp32 logits and PyTorch's sort of them (values, int64 indices, radix buffers)";
    t.in_pool = in.engine != Engine::Sglang;
    t.last_stage_only = true;
    return t;
}

OverheadTerm cublas_term(const OverheadInputs& in) {
    OverheadTerm t;
    t.name = "cuBLAS workspace";
    t.bytes = t.low_bytes = t.high_bytes = cublas_workspace_bytes(in.hopper);
    t.basis = in.hopper ? "4,096 KiB x 8 (Hopper)" : "4,096 KiB x 2 + 16 KiB x 8";
    t.source = "PyTorch aten/src/ATen/cuda/CublasHandlePool.cpp getChosenWorkspaceSize, allocated at the first GEMM";
    return t;
}

// Logits and sampler buffers for the legacy V0 engine and SGLang, summed
// with the activation term. V0 computed fp32 logits for the last token of
// each sequence only (4 B); for SGLang (whose terms sit outside its pool)
// kvplan keeps the 32 B per entry it fitted to llm-d's H100 table before it
// modelled vLLM V1's sampler from its code.
OverheadTerm summed_sampler_term(const ModelSpec& spec, const OverheadInputs& in) {
    const std::int64_t per_entry = in.engine == Engine::VllmV0 ? 4 : 32;
    OverheadTerm t;
    t.name = "logits and sampler buffers";
    t.bytes = checked_mul(checked_mul(in.max_num_seqs, spec.vocab, "sampler bytes"), per_entry, "sampler bytes");
    t.low_bytes = t.bytes * 85 / 100;
    t.high_bytes = t.bytes * 115 / 100;
    t.basis = group_digits(in.max_num_seqs) + " sequences x " + group_digits(spec.vocab) + " vocab x " + std::to_string(per_entry) + " B";
    t.source = in.engine == Engine::VllmV0 ? "vLLM V0 profile_run: fp32 logits of the last token per sequence"
                                           : "fit to llm-d's H100 table (vLLM V1 at 1,024 sequences), within 15%";
    t.in_pool = in.engine != Engine::Sglang;
    t.last_stage_only = true;
    return t;
}

// CUDA graphs: vLLM captures them after the KV cache is allocated
// (Worker.compile_or_warm_up_model), so they come out of the (1 -
// utilization) headroom, not the pool; llm-d measured -0.88 to +1.03 GiB.
// vLLM >= 0.21 estimates them inside the budget and, per vllm#45178 and
// vllm#50780, can take far more; pass --overhead then.
OverheadTerm cuda_graph_term() {
    OverheadTerm t;
    t.name = "CUDA graphs";
    t.bytes = 0;
    t.low_bytes = -gib(0.88);
    t.high_bytes = gib(1.03);
    t.basis = "captured after the KV cache is allocated, from the headroom";
    t.source = "vllm/v1/worker/gpu_worker.py compile_or_warm_up_model; llm-d measured -0.88..+1.03 GiB";
    t.in_pool = false;
    return t;
}

// vLLM's rotary embedding keeps one cos/sin cache of max_position_embeddings
// x rotary_dim in the model dtype, built with the model and so counted in
// "Model loading took" (vllm/model_executor/layers/rotary_embedding
// RotaryEmbedding._compute_cos_sin_cache; get_rope shares one per model).
// Llama-3.1-8B: 131,072 x 128 x 2 B = 32 MiB, the difference between its
// 14.96 GiB of parameters and the 14.99 GiB vLLM logs (vllm#10517, llm-d,
// the RTX 3090 0.17.1 logs).
std::optional<OverheadTerm> rotary_cache_term(const ModelSpec& spec) {
    const bool attention = std::any_of(spec.layers.begin(), spec.layers.end(), [](const LayerSpec& l) {
        return l.kind == LayerKind::Full || l.kind == LayerKind::Sliding || l.kind == LayerKind::Chunked;
    });
    if (!attention || spec.max_position_tokens <= 0 || spec.head_dim <= 0) return std::nullopt;
    OverheadTerm t;
    t.name = "rotary cos/sin cache (vLLM weights)";
    t.bytes = t.low_bytes = t.high_bytes = checked_mul(checked_mul(spec.max_position_tokens, spec.head_dim, "rotary cache"), 2, "rotary cache");
    t.basis = group_digits(spec.max_position_tokens) + " positions x " + group_digits(spec.head_dim) + " x 2 B";
    t.source = "vLLM RotaryEmbedding cos_sin_cache, one per model (get_rope), allocated with the weights";
    return t;
}

// vLLM 0.18-0.20 run the CUDA-graph memory profile (a throwaway capture on a
// minimal KV cache) inside memory_profiling() and discard the estimate, but
// non_torch_increase is read when the context exits, after the capture, so
// what the capture leaves outside PyTorch's allocator is subtracted from the
// pool (vllm PR #51590: "previously ran and discarded the result";
// local-inference-lab/vllm#201). No formula in vLLM's source gives it; two
// logs measure it: 0.60 GiB (RTX 4090, Llama-3.1-8B, 0.19.0) and 0.31 GiB
// (A100 40GB, Qwen3-8B, 0.19.1). kvplan plans with the top of that range, as
// it does for non-torch memory, since an under-estimate is a failed start.
OverheadTerm graph_profile_residue_term() {
    OverheadTerm t;
    t.name = "CUDA-graph profile residue";
    t.bytes = gib(0.60);
    t.low_bytes = gib(0.31);
    t.high_bytes = gib(0.60);
    t.basis = "the throwaway capture's non-torch residue, measured 0.31-0.60 GiB";
    t.source = "vllm/v1/worker/gpu_worker.py determine_available_memory (0.18-0.20); RTX 4090 0.19.0 run, A100 40GB 0.19.1 log";
    return t;
}

// vLLM >= 0.21 subtracts its CUDA-graph estimate (default since v0.21.0):
// the capture is measured on the device, so kvplan names the term and
// leaves it to --overhead.
OverheadTerm graph_estimate_term() {
    OverheadTerm t;
    t.name = "CUDA-graph estimate (not computed)";
    t.bytes = 0;
    t.low_bytes = 0;
    t.high_bytes = gib(4.7);
    t.basis = "add the logged 'Estimated CUDA graph memory' with --overhead";
    t.source = "vllm/v1/worker/gpu_worker.py determine_available_memory: requested - non_kv - cudagraph_memory_estimate_applied";
    return t;
}

}  // namespace

std::int64_t VllmProfilePeak::peak_bytes() const {
    return std::max(forward_bytes, checked_add(hidden_states_bytes, sampler_bytes, "profile peak bytes"));
}

std::int64_t cublas_workspace_bytes(bool hopper) {
    return hopper ? std::int64_t{4096} * 1024 * 8 : std::int64_t{4096} * 1024 * 2 + 16 * 1024 * 8;
}

bool hopper_gpu(const Gpu& gpu) {
    const std::string& id = gpu.id;
    return id.rfind("h100", 0) == 0 || id.rfind("h200", 0) == 0 || id == "h20" || id.rfind("gh200", 0) == 0;
}

VllmSampler vllm_sampler_for_version(int major, int minor, int patch) {
    const bool triton = major > 0 || minor > 16 || (minor == 16 && patch >= 1);
    return triton ? VllmSampler::Triton : VllmSampler::PyTorchSort;
}

VllmProfilePeak vllm_profile_peak(const ModelSpec& spec, const OverheadInputs& in) {
    VllmProfilePeak p;
    p.forward_bytes = activation_term(spec, in).bytes;
    // _dummy_run spreads max_num_batched_tokens over min(tokens, max_num_seqs)
    // dummy requests and returns the last token of each for the sampler.
    p.sampler_rows = std::min(in.max_num_seqs, in.max_batched_tokens);
    // profile_run keeps hidden_states (every token) while the sampler runs,
    // plus the sampled rows and _dummy_sampler_run's torch.rand_like copy.
    p.hidden_states_bytes =
        checked_mul(checked_add(in.max_batched_tokens, checked_mul(2, p.sampler_rows)), checked_mul(spec.hidden, 2), "hidden states bytes");
    const bool triton = in.sampler == VllmSampler::Triton && p.sampler_rows >= 8;
    p.bytes_per_entry = triton ? 14 : sort_bytes_per_entry(p.sampler_rows);
    // The bf16 logits keep the LM head's padded width; the fp32 copy and what
    // follows are sliced to the vocabulary.
    const std::int64_t entries = checked_mul(p.sampler_rows, spec.vocab, "sampler entries");
    const std::int64_t padding = checked_mul(checked_mul(p.sampler_rows, padded_vocab(spec.vocab) - spec.vocab), 2, "sampler bytes");
    p.sampler_bytes = checked_add(checked_mul(entries, p.bytes_per_entry, "sampler bytes"), padding, "sampler bytes");
    if (triton) {
        p.triton_buffer_bytes = checked_mul(checked_mul(triton_buffer_rows(p.sampler_rows), spec.vocab), 4, "Triton buffer bytes");
        p.sampler_bytes = checked_add(p.sampler_bytes, p.triton_buffer_bytes, "sampler bytes");
    }
    return p;
}

std::vector<OverheadTerm> estimate_overhead(const ModelSpec& spec, const OverheadInputs& in) {
    std::vector<OverheadTerm> terms;
    terms.push_back(non_torch_term(in));
    terms.push_back(activation_term(spec, in));
    const bool v1_rule = in.engine == Engine::Vllm || in.engine == Engine::Generic;
    if (v1_rule && spec.vocab > 0) {
        terms.push_back(v1_sampler_term(vllm_profile_peak(spec, in), in, spec.vocab));
        terms.push_back(cublas_term(in));
    } else if (in.engine != Engine::Trtllm && spec.vocab > 0) {
        // TensorRT-LLM sizes its own buffers at build time.
        terms.push_back(summed_sampler_term(spec, in));
    }
    if (in.vllm_release && in.engine == Engine::Vllm) {
        if (auto rotary = rotary_cache_term(spec); rotary && !in.weights_given) terms.push_back(*rotary);
        if (!in.enforce_eager && in.graph_profile == VllmGraphProfile::ProfiledDiscarded) terms.push_back(graph_profile_residue_term());
        if (!in.enforce_eager && in.graph_profile == VllmGraphProfile::EstimateSubtracted) terms.push_back(graph_estimate_term());
    }
    if (!in.enforce_eager) terms.push_back(cuda_graph_term());
    return terms;
}

namespace {

// TensorRT-LLM's k_b_proj_trans on one rank, one layer: [heads, kv_lora_rank,
// qk_nope_head_dim], with one fp32 scale a 128 x 128 block when it is fp8.
// qk_nope is a query head (qk_nope + qk_rope) less the rotary part the
// latent holds beside kv_lora_rank; kv_b_proj holds qk_nope + v rows a head.
std::int64_t trtllm_k_b_proj_trans_bytes(const ModelSpec& spec, const ParamTensor& kv_b, bool block_fp8, std::int64_t attention_tp) {
    const auto mla = std::find_if(spec.layers.begin(), spec.layers.end(), [](const LayerSpec& l) { return l.kind == LayerKind::Mla; });
    if (mla == spec.layers.end() || spec.heads <= 0 || kv_b.rows % spec.heads != 0) return 0;
    const std::int64_t rank = kv_b.cols;  // kv_lora_rank
    const std::int64_t nope = spec.head_dim - (mla->latent_dim - rank);
    if (nope <= 0 || nope >= kv_b.rows / spec.heads) return 0;
    const std::int64_t heads = ceil_div(spec.heads, std::max<std::int64_t>(1, attention_tp));
    const std::int64_t values = checked_mul(checked_mul(heads, rank, "MLA copy"), nope, "MLA copy");
    if (!block_fp8) return bytes_for(values, serving_dtype(spec.checkpoint_dtype));
    return checked_add(values, checked_mul(heads, ceil_div(rank, 128) * ceil_div(nope, 128) * 4, "MLA copy scales"), "MLA copy");
}

}  // namespace

std::optional<OverheadTerm> mla_decode_copy_term(const ModelSpec& spec, Engine engine, std::int64_t first_layer, std::int64_t layers,
                                                 std::int64_t attention_tp) {
    if (engine != Engine::Vllm && engine != Engine::Sglang && engine != Engine::Trtllm) return std::nullopt;
    const auto it = std::find_if(spec.params.begin(), spec.params.end(), [](const ParamTensor& t) { return t.name == "kv_b_proj"; });
    if (it == spec.params.end()) return std::nullopt;
    const ParamTensor& kv_b = *it;
    const bool quantized = quantized_bytes(kv_b, spec.quantization).has_value();
    if (engine == Engine::Vllm && !quantized) return std::nullopt;
    const Quantization& q = spec.quantization;
    const bool fp8 = quantized && q.method == QuantMethod::Fp8;
    const bool block_fp8 = fp8 && q.block_rows == 128 && q.block_cols == 128;
    const bool per_tensor_fp8 = fp8 && !block_fp8;
    const Dtype copy = engine == Engine::Sglang && per_tensor_fp8 ? Dtype::Fp8 : serving_dtype(spec.checkpoint_dtype);
    // The MLA layers in the range: those kv_b_proj names, else its copies in proportion.
    std::int64_t held = 0;
    for (std::int64_t l : kv_b.layers)
        if (l >= first_layer && l < first_layer + layers) ++held;
    const auto total = static_cast<std::int64_t>(spec.layers.size());
    if (kv_b.layers.empty()) held = total > 0 ? ceil_div(checked_mul(kv_b.copies, layers, "MLA layers"), total) : 0;
    if (held == 0) return std::nullopt;
    OverheadTerm t;
    t.name = "MLA decode copy of kv_b_proj";
    if (engine == Engine::Trtllm) {
        const std::int64_t per_layer = trtllm_k_b_proj_trans_bytes(spec, kv_b, block_fp8, attention_tp);
        if (per_layer == 0) return std::nullopt;
        t.bytes = t.low_bytes = t.high_bytes = checked_mul(held, per_layer, "MLA copy bytes");
        t.basis = group_digits(held) + " layers x " + group_digits(per_layer) + " B (k_b_proj_trans" + (block_fp8 ? ", fp8 with block scales)" : ")");
        t.source = "TensorRT-LLM MLA.create_weights: k_b_proj_trans, the K half of kv_b_proj transposed, a parameter of its own";
        return t;
    }
    const std::int64_t rows = ceil_div(kv_b.rows, std::max<std::int64_t>(1, attention_tp));  // heads x (qk_nope + v) on this rank
    const std::int64_t per_layer = bytes_for(checked_mul(rows, kv_b.cols, "MLA copy"), copy);
    t.bytes = t.low_bytes = t.high_bytes = checked_mul(held, per_layer, "MLA copy bytes");
    t.basis = group_digits(held) + " layers x " + group_digits(rows) + " x " + group_digits(kv_b.cols) + " x " +
              std::to_string(dtype_bits(copy) / 8) + " B (" + (engine == Engine::Vllm ? "W_UK_T, W_UV" : "w_kc, w_vc") + ")";
    t.source = engine == Engine::Vllm ? "vLLM MLACommonImpl.process_weights_after_loading: 16-bit copies of a quantized kv_b_proj, kept beside it"
                                      : "SGLang DeepseekV2ForCausalLM.post_load_weights: contiguous copies of kv_b_proj, kept beside it";
    return t;
}

}  // namespace kvplan
