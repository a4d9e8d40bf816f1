#include "core/speed/roofline.hpp"

#include <algorithm>

namespace kvplan {

namespace {

constexpr std::int64_t kMaxSearchBatch = std::int64_t{1} << 24;

// The smallest batch in [1, kMaxSearchBatch] for which `holds` is true, when
// `holds` turns true once and stays true (both searches below are monotone).
template <typename F>
std::optional<std::int64_t> first_batch(F holds) {
    if (!holds(kMaxSearchBatch)) return std::nullopt;
    std::int64_t lo = 1, hi = kMaxSearchBatch;
    while (lo < hi) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        if (holds(mid)) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

RooflineRow row_at(const CostModel& m, const RooflineInputs& in, std::int64_t batch) {
    RooflineRow r;
    r.batch = batch;
    r.context = in.context;
    r.step = decode_step(m, batch, in.context);
    r.tokens_per_s_per_user = 1.0 / r.step.total_s;
    r.tokens_per_s_total = static_cast<double>(batch) / r.step.total_s;
    r.kv_share = (r.step.kv_read_bytes + r.step.kv_write_bytes) / r.step.bytes();
    r.fits = !in.max_batch || batch <= *in.max_batch;
    if (in.price_per_hour)
        r.usd_per_million_tokens = usd_per_million_tokens(*in.price_per_hour, m.layout.active() ? m.layout.gpus : m.tp, r.tokens_per_s_total);
    if (in.spec) {
        SpecRow s;
        s.step = spec_step(m, in.spec->draft, in.spec->k, batch, in.context);
        s.expected_tokens = expected_tokens_per_step(in.spec->rates);
        s.tokens_per_s_per_user = s.expected_tokens / s.step.total_s;
        s.tokens_per_s_total = s.tokens_per_s_per_user * static_cast<double>(batch);
        // (E / spec step) / (1 / plain step): tokens per second with, over without.
        s.speedup = s.expected_tokens * r.step.total_s / s.step.total_s;
        r.spec = s;
    }
    return r;
}

}  // namespace

double usd_per_million_tokens(double price_per_hour, std::int64_t gpus, double tokens_per_s) {
    return price_per_hour * static_cast<double>(gpus) / 3600.0 / tokens_per_s * 1e6;
}

Roofline make_roofline(const CostModel& m, const RooflineInputs& in) {
    Roofline out;
    for (std::int64_t b : in.batches) out.rows.push_back(row_at(m, in, b));
    out.prefill = prefill_step(m, 1, in.prompt);
    out.ttft_s = out.prefill.total_s;
    // Decoding `output` tokens at batch 1 from context `prompt`: the mean step is the one at the mean context.
    out.e2e_s = out.ttft_s + static_cast<double>(in.output) * decode_step(m, 1, in.prompt + in.output / 2).total_s;

    out.kv_equals_weights_batch = first_batch([&](std::int64_t b) {
        StepCost s = decode_step(m, b, in.context);
        return s.kv_read_bytes >= s.weight_bytes;
    });
    if (m.flops_per_s > 0) out.compute_bound_batch = first_batch([&](std::int64_t b) { return decode_step(m, b, in.context).compute_bound; });
    out.max_batch = in.max_batch;
    if (in.spec) {
        out.spec_expected_tokens = expected_tokens_per_step(in.spec->rates);
        for (const RooflineRow& r : out.rows)
            if (r.spec->speedup < 1.0 && (!out.spec_break_even_batch || r.batch < *out.spec_break_even_batch)) out.spec_break_even_batch = r.batch;
    }
    if (in.max_batch && *in.max_batch > 0) out.ceiling = row_at(m, in, *in.max_batch);
    return out;
}

}  // namespace kvplan
