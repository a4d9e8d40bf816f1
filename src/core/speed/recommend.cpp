#include "core/speed/recommend.hpp"

#include <algorithm>

#include "core/memory/capacity.hpp"
#include "core/error.hpp"
#include "core/memory/kv_size.hpp"
#include "core/speed/roofline.hpp"

namespace kvplan {

Recommendation recommend(const RecommendInputs& in) {
    if (!(in.ttft_s > 0) || !(in.tpot_s > 0)) usage_error("--ttft and --tpot must be positive seconds");
    if (in.context < 2) usage_error("--context must be at least 2 tokens");
    const std::int64_t output = std::min(in.output, in.context - 1);
    const std::int64_t prompt = in.prompt > 0 ? in.prompt : in.context - output;
    if (prompt > in.context) usage_error("--prompt (" + std::to_string(prompt) + ") exceeds --context (" + std::to_string(in.context) + ")");

    Recommendation out;
    const ModelSpec& spec = *in.model;
    const WeightSizing weights = size_weights_in(spec, in.weights);
    bool ttft_met = false, tpot_met = false;
    std::string skipped;
    for (const Gpu& gpu : in.gpus) {
        for (std::int64_t tp : {1, 2, 4, 8}) {
            if (tp > in.max_gpus) break;
            try {
                check_tp(spec, tp);
            } catch (const Error&) {
                continue;  // the model's heads do not split this way
            }
            CostModelInputs ci{in.model, gpu, in.weights, in.kv_dtype, tp, in.efficiency, std::nullopt};
            const CostModel m = make_cost_model(ci);
            if (m.flops_per_s <= 0) {
                skipped += (skipped.empty() ? "" : ", ") + gpu.id;
                break;
            }
            ++out.configurations;

            // Memory: vLLM's accounting at max_model_len = context, weights in the chosen format.
            CapacityInputs cap;
            cap.gpu = gpu;
            cap.engine = Engine::Vllm;
            cap.tp = tp;
            cap.contexts = {in.context};
            cap.max_model_len = in.context;
            cap.kv_dtype = in.kv_dtype;
            cap.longest_lengths = false;  // only the rows are read
            if (!in.weights.as_checkpoint) cap.weights_bytes = (weights.bytes + tp - 1) / tp;
            const CapacityPlan plan = plan_capacity(spec, cap);
            const std::int64_t max_requests = plan.rows.at(0).max_requests;
            if (max_requests < 1) continue;
            ++out.fitting;

            Candidate c;
            c.gpu = gpu.id;
            c.tp = tp;
            c.max_requests = max_requests;
            c.ttft_s = prefill_step(m, 1, prompt).total_s;
            c.batch = 1;
            c.tpot_s = decode_step(m, 1, in.context).total_s;
            c.tokens_per_s_per_gpu = 1.0 / c.tpot_s / static_cast<double>(tp);
            if (!out.best_ttft || c.ttft_s < out.best_ttft->ttft_s) out.best_ttft = c;
            if (!out.best_tpot || c.tpot_s < out.best_tpot->tpot_s) out.best_tpot = c;
            ttft_met = ttft_met || c.ttft_s <= in.ttft_s;
            tpot_met = tpot_met || c.tpot_s <= in.tpot_s;
            if (c.ttft_s > in.ttft_s || c.tpot_s > in.tpot_s) continue;

            // The largest batch that still meets the TPOT target (step time grows with the batch).
            std::int64_t lo = 1, hi = max_requests;
            while (lo < hi) {
                const std::int64_t mid = lo + (hi - lo + 1) / 2;
                if (decode_step(m, mid, in.context).total_s <= in.tpot_s) lo = mid;
                else hi = mid - 1;
            }
            c.batch = lo;
            c.tpot_s = decode_step(m, lo, in.context).total_s;
            c.tokens_per_s_per_gpu = static_cast<double>(lo) / c.tpot_s / static_cast<double>(tp);
            if (auto p = in.prices.find(gpu.id); p != in.prices.end())
                c.usd_per_million_tokens = usd_per_million_tokens(p->second, tp, static_cast<double>(lo) / c.tpot_s);
            c.max_model_len = in.context;
            c.kv_dtype = plan.kv_dtype;
            c.vllm_mem_fraction = plan.budget.mem_fraction;
            c.sglang_mem_fraction = default_mem_fraction(Engine::Sglang, c.tp);
            out.candidates.push_back(c);
        }
    }

    if (!skipped.empty()) out.notes.push_back("skipped for want of a FLOP/s figure (no TTFT): " + skipped);

    // Best first: cheapest per million tokens when priced, else most tokens/s per GPU; then fewer GPUs.
    std::stable_sort(out.candidates.begin(), out.candidates.end(), [](const Candidate& a, const Candidate& b) {
        if (a.usd_per_million_tokens.has_value() != b.usd_per_million_tokens.has_value()) return a.usd_per_million_tokens.has_value();
        if (a.usd_per_million_tokens && *a.usd_per_million_tokens != *b.usd_per_million_tokens)
            return *a.usd_per_million_tokens < *b.usd_per_million_tokens;
        if (a.tokens_per_s_per_gpu != b.tokens_per_s_per_gpu) return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu;
        return a.tp < b.tp;
    });
    if (out.candidates.empty()) {
        if (out.fitting == 0) out.binding = "memory";
        else if (!ttft_met && !tpot_met) out.binding = "both";
        else if (!ttft_met) out.binding = "ttft";
        else if (!tpot_met) out.binding = "tpot";
        else out.binding = "separately";
    }
    return out;
}

}  // namespace kvplan
