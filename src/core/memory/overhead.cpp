#include "core/memory/overhead.hpp"

#include <algorithm>

#include "core/checked.hpp"
#include "core/digits.hpp"

namespace kvplan {

namespace {

std::int64_t gib(double g) { return static_cast<std::int64_t>(g * 1073741824.0 + 0.5); }

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

std::vector<OverheadTerm> estimate_overhead(const ModelSpec& spec, const OverheadInputs& in) {
    std::vector<OverheadTerm> terms;

    // 1. Memory outside PyTorch's allocator that appears while the engine
    //    starts: cuBLAS/cuDNN workspaces, NCCL buffers under TP. Measured
    //    0.03-0.35 GiB on one GPU (vllm#13882 0.03, vllm#12330 0.10, llm-d
    //    H100 0.13-0.14, vllm#10517 0.35; vLLM PR #10511 logged 1.79) and
    //    0.54-0.55 GiB at TP 2 (llm-d). kvplan plans with the top of the
    //    single-GPU range, 0.35 GiB, since an under-estimate is an OOM, plus
    //    the 0.42 GiB TP 2 measured for NCCL.
    {
        OverheadTerm t;
        t.name = "non-torch memory (cuBLAS/NCCL workspaces)";
        t.bytes = gib(0.35) + (in.tp > 1 ? gib(0.42) : 0);
        t.low_bytes = in.tp > 1 ? gib(0.54) : gib(0.03);
        t.high_bytes = gib(1.79) + (in.tp > 1 ? gib(0.42) : 0);
        t.basis = in.tp > 1 ? "0.35 GiB + 0.42 GiB for NCCL at TP > 1" : "0.35 GiB";
        t.source = "measured: llm-d empirical-vllm-memory-results (H100), vllm#10517, vllm#12330, vllm#13882, vllm PR #10511";
        terms.push_back(t);
    }

    // 2. The activation peak of the profiling forward pass over
    //    max_num_batched_tokens: the MLP's gate/up output and activation
    //    (3 x intermediate per token) plus about three hidden-size buffers
    //    (residual, norm output, attention output), 16-bit. Fit: Llama-3.1-8B
    //    on vLLM V0 measured 2.07 GiB at 20,000 tokens and 2.99 GiB at 29,000
    //    (vllm#10517: peak_torch_memory - weights), i.e. 107 KiB/token;
    //    (3 x 14,336 + 3 x 4,096) x 2 B = 110,592 B/token. Across llm-d's V1
    //    rows the estimate (with term 3) is within -13%..+7%.
    const std::int64_t width = activation_width(spec, in.tp);
    const std::int64_t per_token = checked_mul(checked_add(checked_mul(3, width), checked_mul(3, spec.hidden)), 2, "activation bytes");
    {
        OverheadTerm t;
        t.name = "activation peak (profiling forward pass)";
        t.bytes = checked_mul(in.max_batched_tokens, per_token, "activation bytes");
        t.low_bytes = t.bytes * 85 / 100;
        t.high_bytes = t.bytes * 115 / 100;
        t.basis = group_digits(in.max_batched_tokens) + " batched tokens x (3 x " + group_digits(width) + " + 3 x " + group_digits(spec.hidden) + ") x 2 B";
        t.source = "fit to vllm#10517 (V0, 20,000 and 29,000 tokens) and llm-d's H100 table (V1, 8,192 tokens), within 15%";
        t.in_pool = in.engine != Engine::Sglang;
        terms.push_back(t);
    }

    // 3. Logits and sampler buffers for max_num_seqs sequences over the whole
    //    vocabulary. vLLM V1 profiles the sampler on max_num_seqs rows; llm-d
    //    measured activation peaks proportional to the vocabulary (Llama-3.1-8B
    //    4.76 GiB, Qwen3 5.56-5.64 GiB, gpt-oss 7.38 GiB at 1,024 sequences),
    //    which this term (32 B per sequence per vocabulary entry: fp32 logits,
    //    probabilities, log-probabilities and sort buffers) plus term 2
    //    reproduces. V0 computed fp32 logits for the last token of each
    //    sequence only (4 B); TensorRT-LLM sizes its own buffers at build time.
    if (in.engine != Engine::Trtllm && spec.vocab > 0) {
        const std::int64_t per_entry = in.engine == Engine::VllmV0 ? 4 : 32;
        OverheadTerm t;
        t.name = "logits and sampler buffers";
        t.bytes = checked_mul(checked_mul(in.max_num_seqs, spec.vocab, "sampler bytes"), per_entry, "sampler bytes");
        t.low_bytes = t.bytes * 85 / 100;
        t.high_bytes = t.bytes * 115 / 100;
        t.basis = group_digits(in.max_num_seqs) + " sequences x " + group_digits(spec.vocab) + " vocab x " + std::to_string(per_entry) + " B";
        t.source = in.engine == Engine::VllmV0 ? "vLLM V0 profile_run: fp32 logits of the last token per sequence"
                                               : "fit to llm-d's H100 table (vLLM V1 _dummy_sampler_run over max_num_seqs)";
        t.in_pool = in.engine != Engine::Sglang;
        terms.push_back(t);
    }

    // 4. CUDA graphs: vLLM captures them after the KV cache is allocated
    //    (Worker.compile_or_warm_up_model), so they come out of the
    //    (1 - utilization) headroom, not the pool; llm-d measured -0.88 to
    //    +1.03 GiB. vLLM >= 0.21 estimates them inside the budget and, per
    //    vllm#45178 and vllm#50780, can take far more; pass --overhead then.
    {
        OverheadTerm t;
        t.name = "CUDA graphs";
        t.bytes = 0;
        t.low_bytes = -gib(0.88);
        t.high_bytes = gib(1.03);
        t.basis = "captured after the KV cache is allocated, from the headroom";
        t.source = "vllm/v1/worker/gpu_worker.py compile_or_warm_up_model; llm-d measured -0.88..+1.03 GiB";
        t.in_pool = false;
        terms.push_back(t);
    }
    return terms;
}

}  // namespace kvplan
