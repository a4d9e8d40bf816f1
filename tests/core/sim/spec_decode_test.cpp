// Speculative decoding in the simulator (SchedulerConfig::spec) against
// results derived by hand: the tokens each verify step keeps when every
// draft is accepted or none is, the proposer's time added to each step, the
// budget the drafts take, and the mean tokens per step against
// 1 + a + a^2 + ... (Leviathan et al. 2023, eq. 1).
#include <cmath>

#include <catch2/catch.hpp>

#include "core/sim/scheduler.hpp"
#include "core/speed/speculative.hpp"

using namespace kvplan;

namespace {

const StepPricer ten_ms = [](const std::vector<SeqWork>&) { return 0.01; };

SchedulerConfig spec_config(std::int64_t k, double rate) {
    SchedulerConfig c;
    c.num_gpu_blocks = 1000;
    c.block_size = 16;
    c.max_num_seqs = 8;
    c.max_num_batched_tokens = 8192;
    c.spec.k = k;
    c.spec.rates.assign(static_cast<std::size_t>(k), rate);
    return c;
}

Workload one_request(std::int64_t input, std::int64_t output) {
    Workload w;
    w.requests.push_back(SimRequest{0.0, input, output, {}, 0});
    return w;
}

}  // namespace

TEST_CASE("spec decode: every draft accepted keeps K + 1 tokens a step, none accepted keeps one, by hand") {
    // 100-token prompt, 9 output tokens, every step 10 ms. The prefill step
    // samples token 1 at 10 ms. With K = 3 and every draft accepted, each
    // decode step keeps 3 drafts + 1 sampled token: tokens 2-5 at 20 ms,
    // 6-9 at 30 ms. With none accepted each step keeps 1: 8 decode steps, 90 ms.
    const SimRun all = simulate(one_request(100, 9), spec_config(3, 1.0), ten_ms, true);
    CHECK(all.requests[0].first_token_s == Approx(0.01));
    CHECK(all.requests[0].finish_s == Approx(0.03));
    CHECK(all.spec_verifies == 2);
    CHECK(all.spec_drafts == 6);
    CHECK(all.spec_accepted == 6);
    CHECK(all.spec_kept_tokens == 8);
    const SimRun none = simulate(one_request(100, 9), spec_config(3, 0.0), ten_ms, true);
    CHECK(none.requests[0].finish_s == Approx(0.09));
    CHECK(none.spec_verifies == 8);
    CHECK(none.spec_accepted == 0);
    CHECK(none.spec_kept_tokens == 8);
    SECTION("the last step keeps only what the output still needs") {
        // 8 output tokens: after token 5 three remain, so the second verify keeps 3 of its 4.
        const SimRun eight = simulate(one_request(100, 8), spec_config(3, 1.0), ten_ms, true);
        CHECK(eight.spec_kept_tokens == 7);
        CHECK(eight.spec_accepted == 6);
        CHECK(eight.requests[0].finish_s == Approx(0.03));
    }
}

TEST_CASE("spec decode: the proposer's time is added to each step with drafts, and drafts take the token budget") {
    // The proposer costs 4 ms per step: the two verify steps take 14 ms, the
    // prefill step (no drafts yet) 10 ms: finish at 10 + 14 + 14 = 38 ms.
    SchedulerConfig c = spec_config(3, 1.0);
    std::int64_t calls = 0, batch_seen = 0;
    c.spec.draft_s = [&](std::int64_t batch, std::int64_t) {
        ++calls;
        batch_seen = batch;
        return 0.004;
    };
    const SimRun run = simulate(one_request(100, 9), c, ten_ms, true);
    CHECK(run.requests[0].finish_s == Approx(0.038));
    CHECK(calls == 2);
    CHECK(batch_seen == 1);
    // A budget of 2 tokens a step cuts each verify to 1 token + 1 draft: 2 tokens kept a step,
    // so 8 tokens after the first take 4 steps. The 100-token prompt takes 50 steps of 2 tokens.
    SchedulerConfig tight = spec_config(3, 1.0);
    tight.max_num_batched_tokens = 2;
    const SimRun cut = simulate(one_request(100, 9), tight, ten_ms, true);
    CHECK(cut.spec_verifies == 4);
    CHECK(cut.spec_drafts == 4);
    CHECK(cut.requests[0].finish_s == Approx(0.54));
}

TEST_CASE("spec decode: the mean tokens kept per step is 1 + a + a^2 + a^3 for K = 3 at a = 0.7, within 1%") {
    // E = 1 + 0.7 + 0.49 + 0.343 = 2.533. 200 requests of 1,000 output
    // tokens: about 79,000 verify steps; the kept tokens per step have a
    // standard deviation near 1.2, so the mean's standard error is about 0.2%.
    Workload w;
    for (int i = 0; i < 200; ++i) w.requests.push_back(SimRequest{0.001 * i, 64, 1000, {}, 0});
    SchedulerConfig c = spec_config(3, 0.7);
    c.max_num_seqs = 64;
    c.num_gpu_blocks = 20000;
    const SimRun run = simulate(w, c, ten_ms, true);
    const double mean = static_cast<double>(run.spec_kept_tokens) / static_cast<double>(run.spec_verifies);
    // The last step of each request can be cut short, which lowers the mean by well under 0.1%.
    CHECK(mean == Approx(expected_tokens_per_step({0.7, 0.7, 0.7})).epsilon(0.01));
    CHECK(expected_tokens_per_step({0.7, 0.7, 0.7}) == Approx(2.533));
    for (const RequestRecord& r : run.requests) CHECK(r.finish_s > 0);
    // Deterministic: the same inputs give the same run.
    CHECK(simulate(w, c, ten_ms).spec_accepted == run.spec_accepted);
}
