// Speculative decoding: a cheap proposer drafts K tokens per sequence, the
// target model verifies all of them in one forward pass of K + 1 new tokens
// per sequence, and on average E of them are kept. docs/roofline.md,
// "Speculative decoding".
#pragma once

#include <cstdint>
#include <vector>

#include "core/speed/step_cost.hpp"

namespace kvplan {

// vLLM's --speculative-config methods kvplan prices: "mtp" (the model's own
// multi-token-prediction layer), "eagle" (a one-layer draft head) and
// "draft" (a separate, smaller model).
enum class SpecMethod { Mtp, Eagle, Draft };
const char* spec_method_name(SpecMethod method);

// Expected tokens a sequence keeps per speculative step, the bonus token
// included: E = 1 + sum_{i=1..K} prod_{j<=i} a_j, where a_j is the
// probability that draft position j is accepted given that positions
// 1..j-1 were (Leviathan et al. 2023, "Fast Inference from Transformers via
// Speculative Decoding", eq. 1: (1 - a^(K+1)) / (1 - a) for one rate a).
// It is what vLLM reports as "mean acceptance length", 1 + accepted / drafts
// (vllm/v1/spec_decode/metrics.py, SpecDecodingLogging.log). `rates` holds
// a_1..a_K, each in [0, 1].
double expected_tokens_per_step(const std::vector<double>& rates);

// The cost model of one draft pass of an EAGLE head or an MTP module: one
// decoder layer of the target's shape (the target's first, with its routed
// experts averaged over its MoE layers) plus the target's LM head, with no
// step overhead of its own (the proposer runs inside the target's engine
// step: vllm/v1/worker/gpu_model_runner.py, propose_draft_token_ids).
CostModel make_draft_head_model(const CostModelInputs& target);
// The same under DP attention + EP (`target.tp` the attention TP): the
// head's layer is split as the target's are (its routed experts over EP,
// its dispatch and combine in lockstep with the other ranks), as vLLM builds
// the MTP module's MoE with the target's parallel config.
CostModel make_draft_head_model(const CostModelInputs& target, const ExpertLayoutInputs& layout);

// The weight bytes an EAGLE or MTP head adds to the target's, on all GPUs
// together: one decoder layer of the target's shape (its last layer, which
// for DeepSeek's MTP is a mixture-of-experts layer like the MTP module's) and
// the 2 x hidden -> hidden projection that joins the token's embedding to
// the hidden state (EAGLE's fc, DeepSeek's eh_proj), in the serving dtype.
// The embedding and the LM head are the target's: vLLM's EagleProposer
// shares them rather than loading its own (docs/simulate.md, "Speculative
// decoding").
std::int64_t draft_head_weight_bytes(const ModelSpec& target);
// Those bytes on one GPU of a layout: the routed experts over EP x expert
// TP, the rest over the attention TP (a DP rank holds its own copy).
std::int64_t draft_head_weight_bytes_per_gpu(const ModelSpec& target, const ScaleOut& layout);

// What the proposer adds to one GPU's memory, for the pool vLLM sizes
// after loading it (cli/sim_setup.cpp add_speculation, the analytic
// recommend): its weights, a draft model's over TP or an EAGLE/MTP head's
// (under `layout`, its routed experts over EP as the target's are; an MLA
// head with vLLM's decode copy of its kv_b_proj, one layer's); and the
// KV bytes per token its attention layers take from the same pool, one
// target layer's for mtp/eagle (the head's first caching layer), the draft
// model's for draft. `draft` is read for SpecMethod::Draft only.
std::int64_t proposer_weight_bytes_per_gpu(SpecMethod method, const ModelSpec& target, const ModelSpec* draft, std::int64_t tp,
                                           const ScaleOut* layout = nullptr);
std::int64_t proposer_kv_bytes_per_token(SpecMethod method, const ModelSpec& target, const ModelSpec* draft, std::int64_t tp, Dtype kv_dtype);

// A separate draft model's cost model, on the target's GPU, TP and
// efficiency, without a step overhead of its own.
CostModel make_draft_model(const CostModelInputs& draft);

// One draft pass of the proposer `method` names for `target`: the draft
// model (`draft`, SpecMethod::Draft) on the target's device, TP and KV
// dtype in its checkpoint's format, or the MTP/EAGLE head (under `layout`
// when given). The draft model's heads must split over the target's TP
// (check_tp throws Error(Usage) otherwise).
CostModel make_proposer_model(SpecMethod method, const ModelSpec* draft, const CostModelInputs& target, const ExpertLayoutInputs* layout = nullptr);

// One speculative step at `batch` sequences of `context` cached tokens.
struct SpecStep {
    StepCost verify;      // the target: batch x (K + 1) new tokens at `context`
    StepCost draft_pass;  // one draft pass at `batch`
    double draft_s = 0;   // K draft passes
    double total_s = 0;   // verify + draft
};

// With a DP attention + EP layout (target.layout active) the batch is the
// replica's, spread over the DP ranks as evenly as it goes, and the verify
// step is the lockstep step of those ranks (dp_mixed_step).
SpecStep spec_step(const CostModel& target, const CostModel& draft, std::int64_t k, std::int64_t batch, std::int64_t context);

}  // namespace kvplan
