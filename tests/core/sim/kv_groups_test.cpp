// vLLM's KV-cache groups in the simulator: every group takes its own blocks
// from the shared pool, sliding windows free what fell out of them, and the
// prefix cache hits only what every group can serve. Each expected number is
// derived by hand in the test's comment from the rules in
// vllm/v1/core/single_type_kv_cache_manager.py and kv_cache_coordinator.py.
#include <catch2/catch.hpp>

#include "core/memory/capacity.hpp"
#include "core/sim/metrics.hpp"
#include "core/sim/scheduler.hpp"
#include "io/trace_reader.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

const StepPricer one_second = [](const std::vector<SeqWork>&) { return 1.0; };

// One full-attention group and one sliding-window group of 8 tokens, both
// with blocks of 4 tokens.
SchedulerConfig full_and_sliding(std::int64_t blocks, std::int64_t batched) {
    SchedulerConfig c;
    c.num_gpu_blocks = blocks;
    c.block_size = 4;
    c.max_num_batched_tokens = batched;
    c.groups = {KvGroup{KvGroupKind::Full, 0, 4}, KvGroup{KvGroupKind::Sliding, 8, 4}};
    return c;
}

// Blocks in use after each one-second step (the sample at t = k s).
std::vector<std::int64_t> used_by_step(const SimRun& run) {
    std::vector<std::int64_t> used;
    for (const TimePoint& p : per_second(run.timeseries)) used.push_back(std::llround(p.kv_cache_usage * static_cast<double>(run.total_blocks)));
    return used;
}

}  // namespace

TEST_CASE("a lone request holds every group's blocks, and its window's old blocks go back to the pool") {
    // 20 prompt tokens + 6 output, chunks of 8 tokens, steps of 1 s; a full
    // group and a sliding group of window 8, blocks of 4. At each step the
    // request holds ceil(t / 4) full blocks and ceil(t / 4) - floor(s / 4)
    // sliding ones, t the tokens after the step, s = max(0, c - 8 + 1) the
    // tokens before the window of the c computed when the step is scheduled:
    //   step 1: c 0,  t 8:  2 + 2       = 4
    //   step 2: c 8,  t 16: 4 + 4 - 0   = 8
    //   step 3: c 16, t 20: 5 + 5 - 2   = 8 (the prompt's last chunk)
    //   step 4: c 20, t 21: 6 + 6 - 3   = 9
    //   steps 5, 6: c 21, 22: 6 + 6 - 3 = 9
    //   step 7: c 23, t 24: 6 + 6 - 4   = 8
    //   step 8: c 24, t 25: 7 + 7 - 4   = 10, then it finishes and frees all.
    // One group charged the whole context would hold ceil(25 / 4) = 7 at most.
    Workload w;
    w.requests.push_back(SimRequest{0.0, 20, 6, {}, 0});
    const SimRun run = simulate(w, full_and_sliding(100, 8), one_second, true);
    CHECK(used_by_step(run) == std::vector<std::int64_t>{4, 8, 8, 9, 9, 9, 8, 0});
    CHECK(run.peak_blocks_used == 10);
    CHECK(run.requests[0].finish_s == 8.0);
}

TEST_CASE("two requests on a sliding model preempt where the groups' blocks run out, and come back on a window hit") {
    // Two requests of 8 + 17 tokens arrive together in a pool of 13 blocks
    // (full group + sliding window 8, blocks of 4). Step 1 prefills both
    // (2 + 2 blocks each); from step 2 both decode with c = 6 + k computed at
    // step k, holding ceil((c + 1) / 4) full and that minus
    // floor(max(0, c - 7) / 4) sliding blocks:
    //   step 2 (c 8): 3 + 3 each, 12 in use; steps 3, 4 (c 9, 10): no change;
    //   step 5 (c 11): each frees its first sliding block, 10 in use;
    //   step 6 (c 12): the first takes 2 more (12 in use), the second needs
    //   2 of the 1 left and, being the newest, preempts itself: it frees its
    //   6 blocks, the first holds 4 + 3 = 7.
    // Steps 7, 8: the second comes back with all 12 of its computed tokens
    // cached (3 full blocks, and the window's 2 sliding blocks before token
    // 12, ceil((8 - 1) / 4) = 2; vLLM's hybrid hit). Its need is 1 new block
    // per group plus the 5 cached blocks, free, that it takes back: 7 > the
    // 6 free. Step 9 (first's c 15) frees the first's second sliding block:
    // 7 free, and it is admitted (13 in use).
    // Neither is rejected: each holds at most 2 x ceil(24 / 4) = 12 blocks
    // (24 = 8 + 17 - 1 tokens, a recompute prefilling them all at once).
    // Charged one group, the two would hold 2 x ceil(24 / 4) = 12 at most:
    // no preemption at all.
    Workload w;
    w.requests.push_back(SimRequest{0.0, 8, 17, {}, 0});
    w.requests.push_back(SimRequest{0.0, 8, 17, {}, 0});
    const SimRun run = simulate(w, full_and_sliding(13, 64), one_second, true);
    const std::vector<TimePoint> seconds = per_second(run.timeseries);
    REQUIRE(seconds.size() > 9);
    const auto at = [&](std::size_t t) { return std::make_pair(seconds[t - 1].running, seconds[t - 1].waiting); };
    const std::vector<std::int64_t> used = used_by_step(run);
    CHECK(std::vector<std::int64_t>(used.begin(), used.begin() + 9) == std::vector<std::int64_t>{8, 12, 12, 12, 10, 7, 7, 7, 13});
    CHECK(at(5) == std::make_pair<std::int64_t, std::int64_t>(2, 0));
    CHECK(at(6) == std::make_pair<std::int64_t, std::int64_t>(1, 1));
    CHECK(at(8) == std::make_pair<std::int64_t, std::int64_t>(1, 1));
    CHECK(at(9) == std::make_pair<std::int64_t, std::int64_t>(2, 0));
    CHECK(run.requests[1].preemptions >= 1);
    CHECK(summarise(run, {}).completed == 2);

    SchedulerConfig one = full_and_sliding(13, 64);
    one.groups.clear();
    CHECK(simulate(w, one, one_second, true).preemptions == 0);
}

TEST_CASE("a prefix hit on a sliding model needs the window's blocks cached, not only the full group's") {
    // Request 1: 32 prompt tokens of one content key, 1 output, prefilled in
    // chunks of 8 (full + sliding window 8, blocks of 4, 40 blocks). Its
    // sliding blocks 0, 1 are freed at step 3 (c 16: 9 tokens skipped) and
    // 2, 3 at step 4 (c 24: 17 skipped), the rest when it finishes, so the
    // free queue reads: 24 never used, sliding 1, 0, 3, 2, full 7 .. 0,
    // sliding 7 .. 4.
    // Request 2 (t 30 s): the same content, 17 tokens: at most 16 cached
    // (all but the last token), full blocks 0-3, and the sliding group's
    // hit needs the ceil((8 - 1) / 4) = 2 blocks before token 16, blocks 2
    // and 3: cached, so 16 tokens hit.
    // With a filler in between (60 tokens: 15 + 15 allocations, after the
    // 24 unused blocks it evicts sliding 1, 0, 3, 2 and full 7, 6), the full
    // group still has blocks 0-3 but the window's are gone: no hit at all.
    Workload w;
    w.requests.push_back(SimRequest{0.0, 32, 1, {42}, 32});
    w.requests.push_back(SimRequest{30.0, 17, 1, {42}, 32});
    const SimRun hit = simulate(w, full_and_sliding(40, 8), one_second, true);
    CHECK(hit.requests[1].cached_tokens == 16);

    Workload f = w;
    f.requests.insert(f.requests.begin() + 1, SimRequest{10.0, 60, 1, {}, 0});
    const SimRun evicted = simulate(f, full_and_sliding(40, 8), one_second, true);
    CHECK(evicted.requests[2].cached_tokens == 0);

    SchedulerConfig one = full_and_sliding(40, 8);
    one.groups.clear();  // one full group of 4: blocks 0-3 hit
    CHECK(simulate(f, one, one_second, true).requests[2].cached_tokens == 16);
}

TEST_CASE("a Mamba group holds one block per request, and refuses prefix caching as vLLM's default does") {
    // Full attention (blocks of 16) + a Mamba group whose block is
    // max_model_len (4096) tokens: a lone 100 + 10 request holds
    // ceil(109 / 16) = 7 + 1 = 8 blocks at its last step.
    SchedulerConfig c;
    c.num_gpu_blocks = 100;
    c.prefix_caching = false;
    c.groups = {KvGroup{KvGroupKind::Full, 0, 16}, KvGroup{KvGroupKind::Mamba, 0, 4096}};
    Workload w;
    w.requests.push_back(SimRequest{0.0, 100, 10, {}, 0});
    CHECK(simulate(w, c, one_second, true).peak_blocks_used == 8);
    c.prefix_caching = true;
    CHECK_THROWS_WITH(simulate(w, c, one_second), Catch::Contains("Mamba"));
}

TEST_CASE("gemma-3-1b's seven groups: a short request holds 7 times one group's blocks, and a trace keeps the pool consistent") {
    // Gemma-3-1B: 22 sliding (window 512) + 4 full layers. vLLM groups them
    // by 4 (22 > 1.5 x 4): 6 sliding groups (the last 2 real + 2 padding)
    // and 1 full, blocks of 16. A lone 100 + 10 request, whose 109 tokens
    // all lie in the window, holds ceil(109 / 16) = 7 blocks in each group:
    // 49.
    const ModelSpec m = preset("gemma-3-1b");
    CapacityInputs in;
    in.gpu = gpu("l4");
    in.engine = Engine::Vllm;
    in.longest_lengths = false;
    const CapacityPlan p = plan_capacity(m, in);
    REQUIRE(p.vllm);
    SchedulerConfig c;
    c.groups = kv_groups_for(*p.vllm, p.max_model_len);
    REQUIRE(c.groups.size() == 7);
    CHECK(std::count_if(c.groups.begin(), c.groups.end(),
                        [](const KvGroup& g) { return g.kind == KvGroupKind::Sliding && g.window_tokens == 512; }) == 6);
    c.num_gpu_blocks = *p.num_blocks;
    Workload lone;
    lone.requests.push_back(SimRequest{0.0, 100, 10, {}, 0});
    CHECK(simulate(lone, c, one_second).peak_blocks_used == 49);

    // The Azure conversation trace over a pool small enough to preempt (3,000
    // blocks: 6,857 tokens of context held in all seven groups), with the pool checked
    // after every step: every request completes or is rejected.
    const Workload w =
        read_trace(std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/reference/traces/azure_2023_conv.csv", TraceOptions{"auto", 1.0, 1500});
    c.num_gpu_blocks = 3000;
    c.max_num_batched_tokens = 2048;
    const SimRun run = simulate(
        w, c, [](const std::vector<SeqWork>&) { return 0.02; }, true);
    const SimSummary s = summarise(run, {});
    CHECK(s.completed + s.rejected == 1500);
    CHECK(s.completed > 1400);
    CHECK(run.preemptions > 0);
    CHECK(run.peak_blocks_used <= 3000);
}
