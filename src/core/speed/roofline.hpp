// The roofline table: decode step time, per-user and total tokens/s, the
// bound, the KV share of bytes and whether the batch fits in memory, for a
// list of batch sizes at one context; TTFT and end-to-end latency for a
// prompt; and the batch sizes where the regime changes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/speed/speculative.hpp"
#include "core/speed/step_cost.hpp"

namespace kvplan {

// Speculative decoding priced next to plain decode (docs/roofline.md,
// "Speculative decoding").
struct SpecInputs {
    SpecMethod method = SpecMethod::Eagle;
    std::int64_t k = 1;         // draft tokens per step (vLLM's num_speculative_tokens)
    std::vector<double> rates;  // conditional acceptance a_1..a_K
    CostModel draft;            // one draft pass (make_draft_head_model / make_draft_model)
    std::string draft_label;    // the draft model, for `draft`
};

struct RooflineInputs {
    std::vector<std::int64_t> batches;      // sequences decoded together
    std::int64_t context = 2560;            // tokens each sequence has cached during decode
    std::int64_t prompt = 2048;             // for TTFT
    std::int64_t output = 512;              // for end-to-end latency
    std::optional<double> price_per_hour;   // USD per GPU-hour
    std::optional<std::int64_t> max_batch;  // requests that fit in memory at `context` (nullopt: not checked)
    std::optional<SpecInputs> spec;         // nullopt: plain decode only
};

struct SpecRow {
    SpecStep step;
    double expected_tokens = 0;        // E, per sequence per step
    double tokens_per_s_per_user = 0;  // E / step
    double tokens_per_s_total = 0;     // E x batch / step
    double speedup = 0;                // against plain decode at the same batch
};

struct RooflineRow {
    std::int64_t batch = 0;
    std::int64_t context = 0;
    StepCost step;
    double tokens_per_s_per_user = 0;
    double tokens_per_s_total = 0;  // all GPUs of the replica together
    double kv_share = 0;            // KV bytes / all bytes moved
    bool fits = true;
    std::optional<double> usd_per_million_tokens;
    std::optional<SpecRow> spec;
};

struct Roofline {
    std::vector<RooflineRow> rows;
    StepCost prefill;  // the prompt, batch 1
    double ttft_s = 0;
    double e2e_s = 0;                                     // TTFT + output tokens decoded at batch 1
    std::optional<std::int64_t> kv_equals_weights_batch;  // first batch whose KV reads reach the weight reads
    std::optional<std::int64_t> compute_bound_batch;      // first batch whose compute time exceeds memory time
    std::optional<std::int64_t> max_batch;                // from memory capacity
    std::optional<RooflineRow> ceiling;                   // the step at max_batch
    double spec_expected_tokens = 0;                      // E, with spec
    std::optional<std::int64_t> spec_break_even_batch;    // smallest batch shown whose speed-up is below 1
};

Roofline make_roofline(const CostModel& model, const RooflineInputs& in);

// USD per million output tokens at `tokens_per_s` for `gpus` GPUs at `price_per_hour` each.
double usd_per_million_tokens(double price_per_hour, std::int64_t gpus, double tokens_per_s);

}  // namespace kvplan
