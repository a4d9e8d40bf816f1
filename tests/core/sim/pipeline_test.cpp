// Pipeline parallelism in the vLLM engine (VllmEngine with stage pricers,
// vllm/v1/engine/core.py step_with_batch_queue): times derived by hand from
// the flow shop of stages, and the invariants of every run on a real trace.
#include <cmath>
#include <string>

#include <catch2/catch.hpp>

#include "core/sim/cluster.hpp"
#include "core/sim/metrics.hpp"
#include "io/trace_reader.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

// A stage that costs `fixed` s plus 10 us per token of the batch.
StepPricer stage(double fixed) {
    return [fixed](const std::vector<SeqWork>& w) {
        std::int64_t tokens = 0;
        for (const SeqWork& s : w) tokens += s.new_tokens;
        return fixed + 1e-5 * static_cast<double>(tokens);
    };
}

StepPricer constant(double s) {
    return [s](const std::vector<SeqWork>&) { return s; };
}

// Unused with stages: a pipeline prices every batch stage by stage.
const StepPricer unused = [](const std::vector<SeqWork>&) -> double { throw std::logic_error("priced as one step"); };

SimRun pipeline(const Workload& w, const SchedulerConfig& c, const StagePricers& stages, std::int64_t replicas = 1) {
    return simulate_cluster(w, c, ClusterConfig{replicas, Router::RoundRobin}, unused, DecodePricer{}, true, stages);
}

// Every request served once, in causal order, and every one of its tokens
// but the first followed by exactly one gap: a batch whose request was
// preempted while it was in flight samples nothing.
void expect_sound(const SimRun& run) {
    std::int64_t gaps = 0;
    for (const RequestRecord& r : run.requests) {
        REQUIRE_FALSE(r.rejected);
        REQUIRE(r.finish_s >= 0);
        REQUIRE(r.arrival_s <= r.scheduled_s);
        REQUIRE(r.scheduled_s < r.first_token_s);
        REQUIRE(r.first_token_s <= r.finish_s);
        gaps += r.output_tokens - 1;
    }
    CHECK(run.itl_s.size() == gaps);
    for (const auto& [gap, n] : run.itl_s.runs()) REQUIRE(gap > 0);
}

}  // namespace

TEST_CASE("a lone request through 2 pipeline stages: TTFT is both stages of its prefill, each token both stages of a decode") {
    // Stage 0 costs 4 ms + 10 us a token (it carries the step overhead),
    // stage 1 1 ms + 10 us a token. The 700-token prompt arriving at 0.25 s
    // is one batch: 11 ms in stage 0, then 8 ms in stage 1: TTFT 19 ms.
    // While it is in flight the request has nothing to compute (its token
    // is not back), so each decode waits for the one before: 4.01 + 1.01 =
    // 5.02 ms a token, E2E 19 + 39 x 5.02 = 214.78 ms.
    SchedulerConfig c;
    c.num_gpu_blocks = 1000;
    Workload w;
    w.requests.push_back(SimRequest{0.25, 700, 40, {}, 0});
    const SimRun run = pipeline(w, c, {stage(0.004), stage(0.001)});
    expect_sound(run);
    const RequestRecord& r = run.requests[0];
    CHECK(r.first_token_s - r.arrival_s == Approx(0.019).epsilon(1e-9));
    CHECK(r.finish_s - r.arrival_s == Approx(0.21478).epsilon(1e-9));
    CHECK(run.steps == 40);
    for (const auto& [gap, n] : run.itl_s.runs()) CHECK(gap == Approx(0.00502).epsilon(1e-9));

    // In chunks of 512 the second chunk enters stage 0 while the first is
    // in stage 1 (a chunk needs no token back). Chunk 1: stage 0 from 0 to
    // 9.12 ms, stage 1 to 15.24 ms. Chunk 2 (188 tokens): stage 0 from 9.12
    // to 15.00 ms, stage 1 from 15.24 (when it is free) to 18.12 ms: TTFT
    // 18.12 ms, where one GPU doing both stages in turn would take 24 ms.
    c.max_num_batched_tokens = 512;
    const SimRun chunked = pipeline(w, c, {stage(0.004), stage(0.001)});
    expect_sound(chunked);
    CHECK(chunked.requests[0].first_token_s - 0.25 == Approx(0.01812).epsilon(1e-9));
    CHECK(chunked.steps == 41);
}

TEST_CASE("two requests alternate in a 2-stage pipeline: each batch enters stage 0 as the other leaves it") {
    // A budget of 8 tokens fits one 8-token prompt per batch. Every stage
    // takes 10 ms. Batch 1 (A's prompt) runs stage 0 in 0-10 ms, stage 1 in
    // 10-20; batch 2 (B's prompt) 10-20, 20-30; the queue is then full. At 20
    // ms A's first token is back and its decode enters stage 0 (20-30, then
    // 30-40); at 30 ms B's, and so on: A's tokens at 20, 40, 60 ms, B's at
    // 30, 50, 70 ms, 6 batches in all.
    SchedulerConfig c;
    c.num_gpu_blocks = 100;
    c.max_num_batched_tokens = 8;
    Workload w;
    w.requests.push_back(SimRequest{0, 8, 3, {}, 0});
    w.requests.push_back(SimRequest{0, 8, 3, {}, 0});
    const SimRun run = pipeline(w, c, {constant(0.01), constant(0.01)});
    expect_sound(run);
    CHECK(run.requests[0].first_token_s == Approx(0.02).epsilon(1e-12));
    CHECK(run.requests[0].finish_s == Approx(0.06).epsilon(1e-12));
    CHECK(run.requests[1].first_token_s == Approx(0.03).epsilon(1e-12));
    CHECK(run.requests[1].finish_s == Approx(0.07).epsilon(1e-12));
    CHECK(run.steps == 6);
    for (const auto& [gap, n] : run.itl_s.runs()) CHECK(gap == Approx(0.02).epsilon(1e-12));
}

TEST_CASE("a saturated decode-bound pipeline of 2 balanced stages serves nearly twice one batch at a time") {
    // 8 requests of a 1-token prompt and 50 output tokens at 0, a budget of
    // 4 tokens: each batch holds 4 requests, every stage 10 ms whatever it
    // holds (decode-bound: the weights, not the batch, set the time).
    // Without a pipeline, one batch at a time through both stages (20 ms a
    // step): the first 4 requests' decodes take the whole budget until they
    // finish, 50 steps, then the other 4, 50 more: 100 x 20 ms = 2 s. With 2
    // batches in flight, the two groups alternate and batch i leaves stage 1
    // at (i + 1) x 10 ms: 100 batches end at 1.01 s, a ratio of 200/101.
    SchedulerConfig c;
    c.num_gpu_blocks = 100;
    c.max_num_batched_tokens = 4;
    Workload w;
    for (int i = 0; i < 8; ++i) w.requests.push_back(SimRequest{0, 1, 50, {}, 0});
    const SimRun one = simulate(w, c, constant(0.02), true);
    const SimRun two = pipeline(w, c, {constant(0.01), constant(0.01)});
    expect_sound(two);
    CHECK(one.end_s == Approx(2.0).epsilon(1e-9));
    CHECK(two.end_s == Approx(1.01).epsilon(1e-9));
    CHECK(two.steps == 100);
    const double ratio = summarise(two, {}).output_tokens_per_s / summarise(one, {}).output_tokens_per_s;
    CHECK(ratio == Approx(200.0 / 101.0).epsilon(1e-6));
}

TEST_CASE("pipelines of 2 and 4 stages serve the Azure conversation trace soundly, preempting in flight, replicas included", "[slow]") {
    // A pool small enough to preempt requests whose batches are in flight:
    // their outputs must be dropped (one gap per token, checked), and the
    // pool's books balance after every batch (check_invariants).
    const Workload w =
        read_trace(std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/reference/traces/azure_2023_conv.csv", TraceOptions{"auto", 4.0, 1500});
    SchedulerConfig c;
    c.num_gpu_blocks = 2000;
    c.max_num_batched_tokens = 2048;
    for (const std::int64_t p : {2, 4}) {
        StagePricers stages;
        for (std::int64_t j = 0; j < p; ++j) stages.push_back(stage(j == 0 ? 0.004 : 0.001));
        for (const std::int64_t replicas : {1, 2}) {
            INFO(p << " stages, " << replicas << " replicas");
            const SimRun run = pipeline(w, c, stages, replicas);
            expect_sound(run);
            if (replicas == 1) CHECK(run.preemptions > 0);
            for (const TimePoint& t : run.timeseries) REQUIRE(t.kv_cache_usage <= 1.0);
            const SimRun again = pipeline(w, c, stages, replicas);
            CHECK(again.end_s == run.end_s);
        }
    }
}
