// The continuous-batching simulator against results derived by hand or from
// queueing theory, and its invariants (block accounting, causality,
// determinism) on every run.
#include "core/sim/scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <tuple>

#include <catch2/catch.hpp>

#include "core/sim/block_pool.hpp"
#include "core/sim/metrics.hpp"
#include "core/sim/synthetic.hpp"
#include "io/trace_reader.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

// Exponential inter-arrivals of rate `rate` from a fixed seed (inverse transform, portable).
// `rescale`: stretch the gaps so the last request arrives at n / rate, as
// `vllm bench serve` does (and synthetic_workload): the run's utilisation is
// then exactly the one asked for, not a draw around it.
Workload poisson(std::int64_t n, double rate, std::int64_t input, std::int64_t output, std::uint64_t seed = 7, bool rescale = false) {
    std::mt19937_64 rng(seed);
    Workload w;
    w.requests.reserve(static_cast<std::size_t>(n));
    double t = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        const double u = (static_cast<double>(rng() >> 11) + 0.5) / 9007199254740992.0;
        t += -std::log(u) / rate;
        w.requests.push_back(SimRequest{t, input, output, {}, 0});
    }
    if (rescale)
        for (SimRequest& r : w.requests) r.arrival_s *= static_cast<double>(n) / rate / t;
    return w;
}

const StepPricer constant(double s) {
    return [s](const std::vector<SeqWork>&) { return s; };
}

void expect_causal(const SimRun& run) {
    for (const RequestRecord& r : run.requests) {
        if (r.rejected) continue;
        REQUIRE(r.arrival_s <= r.scheduled_s);
        REQUIRE(r.scheduled_s < r.first_token_s);
        REQUIRE(r.first_token_s <= r.finish_s);
    }
}

}  // namespace

// The mean M/D/1 wait of poisson(n, rate, ..., seed, true)'s arrivals with
// service `d`, by Lindley's recursion W(n+1) = max(0, W(n) + D - gap),
// drawing the same gaps without storing them: one pass for the last
// arrival (the rescaling), one for the waits.
double lindley_mean_wait(std::int64_t n, double rate, std::uint64_t seed, double d) {
    const auto draw = [rate](std::mt19937_64& rng) {
        const double u = (static_cast<double>(rng() >> 11) + 0.5) / 9007199254740992.0;
        return -std::log(u) / rate;
    };
    std::mt19937_64 rng(seed);
    double t = 0;
    for (std::int64_t i = 0; i < n; ++i) t += draw(rng);
    const double scale = static_cast<double>(n) / rate / t;
    rng.seed(seed);
    double wait = 0, sum = 0, prev = 0, now = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        now += draw(rng);
        if (i > 0) wait = std::max(0.0, wait + d - (now * scale - prev * scale));
        prev = now;
        sum += wait;
    }
    return sum / static_cast<double>(n);
}

TEST_CASE("one request at a time with a constant step is an M/D/1 queue: Pollaczek-Khinchine's mean wait") {
    // Service D = 4 steps of 0.25 s (one prefill step gives the first token,
    // three decodes the rest) = 1 s. First, request by request, the
    // scheduler's wait is Lindley's recursion on the same arrivals:
    // W(n+1) = max(0, W(n) + D - gap), for every one of 200,000 requests.
    // Then the mean against M/D/1's Pollaczek-Khinchine Wq = rho D / (2 (1 - rho)),
    // within 1% at rho 0.5, 0.8 and 0.95.
    //
    // The mean is a control-variate estimate: the scheduler's mean over the
    // 200,000 requests it ran, minus Lindley's mean over the same requests
    // (the two agree request by request, so the difference carries no noise),
    // plus Lindley's mean over the long runs below. The long runs are then
    // cheap (no scheduler), and the claim keeps its precision.
    //
    // How many requests that takes: the sample mean's standard error grows
    // as (1 - rho)^-2. Measured over 20 seeds of Lindley's recursion alone,
    // it is 2.7% at rho 0.95 over 10^6 requests, 2.0% when the gaps are
    // rescaled so the run's utilisation is exactly rho (as vllm bench serve
    // rescales them), and 0.34% for the mean of 16 such runs of 4 x 10^6:
    // 1% is then about 3 standard errors. One rescaled run gives 0.18% at
    // 0.5 over 2 x 10^6 requests and 0.31% at 0.8 over 4 x 10^6. Each run starts empty;
    // the warm-up it misses is a few hundred requests, under 0.01% of 4 x 10^6.
    SchedulerConfig c;
    c.num_gpu_blocks = 100;
    c.max_num_seqs = 1;
    constexpr std::int64_t kSimulated = 200'000;
    struct Case {
        double rho;
        std::int64_t n;
        int runs;
    };
    for (const Case k : {Case{0.5, 2'000'000, 1}, Case{0.8, 4'000'000, 1}, Case{0.95, 4'000'000, 16}}) {
        const Workload w = poisson(kSimulated, k.rho, 8, 4, 7, true);
        const SimRun run = simulate(w, c, constant(0.25));
        double wait = 0, lindley_sum = 0;
        bool lindley = true;
        for (std::size_t i = 0; i < run.requests.size(); ++i) {
            if (i > 0) wait = std::max(0.0, wait + 1.0 - (w.requests[i].arrival_s - w.requests[i - 1].arrival_s));
            lindley = lindley && std::abs(run.requests[i].scheduled_s - run.requests[i].arrival_s - wait) < 1e-6;
            lindley_sum += wait;
        }
        CHECK(lindley);
        const SimSummary s = summarise(run, {}, false);
        CHECK(s.completed == kSimulated);
        const double correction = s.queue_s.mean - lindley_sum / static_cast<double>(kSimulated);
        std::vector<double> means;
        for (int run_index = 0; run_index < k.runs; ++run_index)
            means.push_back(lindley_mean_wait(k.n, k.rho, 7 + static_cast<std::uint64_t>(run_index), 1.0) + correction);
        double mean = 0, spread = 0;
        for (double m : means) mean += m / k.runs;
        for (double m : means) spread += (m - mean) * (m - mean);
        const double standard_error = k.runs > 1 ? std::sqrt(spread / (k.runs - 1) / k.runs) : 0;
        const double expected = k.rho / (2 * (1 - k.rho));
        INFO("rho " << k.rho << ": simulated " << mean << " s (scheduler minus Lindley over " << kSimulated << " requests: " << correction
                    << " s; standard error " << standard_error << " s over " << k.runs << " runs), M/D/1 " << expected << " s");
        CHECK(std::abs(correction) < 1e-6);
        CHECK(std::abs(mean - expected) / expected < 0.01);
        // The runs' own spread backs the comment: 1% is over 2.5 standard errors.
        CHECK(standard_error / expected < 0.004);
    }
}

TEST_CASE("a lone request's E2E is its prefill chunks plus output - 1 decode steps as the roofline prices them") {
    const ModelSpec m = preset("llama-3.1-8b");
    CostModelInputs in;
    in.model = &m;
    in.gpu = gpu("h100-sxm");
    const CostModel cm = make_cost_model(in);
    const StepPricer price = [&](const std::vector<SeqWork>& w) { return mixed_step(cm, w).total_s; };
    SchedulerConfig c;
    c.num_gpu_blocks = 10'000;
    c.max_num_batched_tokens = 2048;
    Workload w;
    w.requests.push_back(SimRequest{0.5, 3000, 5, {}, 0});
    const SimRun run = simulate(w, c, price, true);
    // By hand: chunks of 2,048 and 952 tokens; the second gives the first
    // token; then decodes at contexts 3,000 .. 3,003.
    const double ttft = mixed_step(cm, {{0, 2048}}).total_s + mixed_step(cm, {{2048, 952}}).total_s;
    double e2e = ttft;
    for (std::int64_t ctx = 3000; ctx < 3004; ++ctx) e2e += mixed_step(cm, {{ctx, 1}}).total_s;
    const RequestRecord& r = run.requests[0];
    CHECK(r.first_token_s - r.arrival_s == Approx(ttft).epsilon(1e-12));
    CHECK(r.finish_s - r.arrival_s == Approx(e2e).epsilon(1e-12));
    CHECK(run.steps == 6);
    // And the mixed step agrees with the roofline's own decode and prefill steps.
    CHECK(mixed_step(cm, {{4096, 1}}).total_s == Approx(decode_step(cm, 1, 4096).total_s).epsilon(1e-3));
    CHECK(mixed_step(cm, {{0, 2048}}).total_s == Approx(prefill_step(cm, 1, 2048).total_s).epsilon(1e-9));
}

TEST_CASE("a pool too small for the batch preempts the newest request, recomputes it, and loses nothing") {
    // 40 requests of 512 + 256 tokens need 48 blocks each at the end; 400
    // blocks hold 8 of them, so requests admitted early in prefill are
    // preempted as decodes grow.
    SchedulerConfig c;
    c.num_gpu_blocks = 400;
    c.max_num_seqs = 64;
    Workload w;
    for (int i = 0; i < 40; ++i) w.requests.push_back(SimRequest{0.001 * i, 512, 256, {}, 0});
    const SimRun a = simulate(w, c, constant(0.01), true);
    const SimSummary s = summarise(a, {});
    CHECK(s.completed == 40);
    CHECK(s.preemptions > 0);
    CHECK(s.recomputed_tokens > 0);
    CHECK(s.kv_peak_usage <= 1.0);
    expect_causal(a);
    // Same inputs, same run.
    const SimRun b = simulate(w, c, constant(0.01), true);
    REQUIRE(b.requests.size() == a.requests.size());
    for (std::size_t i = 0; i < a.requests.size(); ++i) CHECK(a.requests[i].finish_s == b.requests[i].finish_s);
    CHECK(a.steps == b.steps);
}

TEST_CASE("a request that can never fit the pool is rejected, not preempted forever") {
    // 10 blocks of 16 = 160 tokens. Request 0's prompt fits (100 tokens, 7
    // blocks) but its life does not: 100 + 100 - 1 = 199 tokens of KV need
    // 13 blocks, so decoding alone it would run out at 160 tokens, preempt
    // itself and recompute forever. Request 1 (50 + 10) fits and completes.
    SchedulerConfig c;
    c.num_gpu_blocks = 10;
    Workload w;
    w.requests.push_back(SimRequest{0.0, 100, 100, {}, 0});
    w.requests.push_back(SimRequest{0.5, 50, 10, {}, 0});
    const SimRun run = simulate(w, c, constant(0.01), true);
    CHECK(run.requests[0].rejected);
    CHECK(run.preemptions == 0);
    CHECK_FALSE(run.requests[1].rejected);
    CHECK(run.requests[1].finish_s == Approx(0.5 + 10 * 0.01));
    CHECK(summarise(run, {}).rejected == 1);
}

TEST_CASE("prompts sharing leading content hit the prefix cache, all but the last token at most") {
    // Two requests with the same 512-token content key: the second reuses
    // the first's 32 blocks of 16 once they are computed; a request whose
    // prompt is entirely cached still computes its last block's token.
    SchedulerConfig c;
    c.num_gpu_blocks = 1000;
    Workload w;
    w.requests.push_back(SimRequest{0.0, 1024, 2, {11, 12}, 512});
    w.requests.push_back(SimRequest{10.0, 1024, 2, {11, 99}, 512});
    w.requests.push_back(SimRequest{20.0, 1024, 2, {11, 12}, 512});
    const SimRun run = simulate(w, c, constant(0.01), true);
    CHECK(run.requests[0].cached_tokens == 0);
    CHECK(run.requests[1].cached_tokens == 512);
    CHECK(run.requests[2].cached_tokens == 1008);  // 63 of 64 blocks: the last token is recomputed
    CHECK(summarise(run, {}).prefix_cache_hit_rate == Approx((512.0 + 1008.0) / 3072.0));
}

TEST_CASE("a shared system prompt hits in whole blocks: the block that straddles its end is the request's own") {
    // --prefix-tokens 1000 with 16-token blocks: blocks 0..61 (992 tokens)
    // are system prompt only; block 62 holds tokens 992..1007, 8 of them the
    // request's own, so it never matches. One client (closed loop), so each
    // request finds the last one's blocks computed and cached: request 1
    // misses, requests 2..10 hit 992 of their 2,000 prompt tokens each.
    SchedulerConfig c;
    c.num_gpu_blocks = 1000;
    Workload w;
    w.concurrency = 1;
    for (int i = 0; i < 10; ++i) w.requests.push_back(SimRequest{0.0, 2000, 8, {}, 0});
    share_system_prompt(w, 1000);
    const SimRun run = simulate(w, c, constant(0.01), true);
    CHECK(run.requests[0].cached_tokens == 0);
    for (int i = 1; i < 10; ++i) CHECK(run.requests[static_cast<std::size_t>(i)].cached_tokens == 992);
    CHECK(summarise(run, {}).prefix_cache_hit_rate == Approx(9.0 * 992.0 / 20000.0));
    Workload keyed;
    keyed.requests.push_back(SimRequest{0.0, 100, 1, {1}, 512});
    CHECK_THROWS_WITH(share_system_prompt(keyed, 10), Catch::Contains("already says what its prompts share"));
}

TEST_CASE("Mooncake's traces: the hit tokens equal an independent count over their hash_ids") {
    // One client at a time and a pool that never evicts, so a block hits
    // exactly when an earlier request had the same chain of content up to
    // it. Counted here with a trie over (hash id, offset) per 16-token block:
    // a block is shared content when it lies inside the prompt (Mooncake's
    // last hash id covers a partial 512-token span), and at most
    // (prompt - 1) / 16 blocks hit (the last token is always computed).
    // The conversation trace shares system prompts and whole conversations;
    // the synthetic one has long prompts with heavy reuse. A pool of 4,000
    // blocks evicts, and can only hit less than the pool that never does.
    const std::string trace = GENERATE(as<std::string>{}, "mooncake_conversation.jsonl", "mooncake_synthetic.jsonl");
    INFO(trace);
    Workload w = read_trace(std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/reference/traces/" + trace, {"auto", 1.0, 1500});
    w.concurrency = 1;
    SchedulerConfig c;
    c.num_gpu_blocks = 10'000'000;
    c.max_num_batched_tokens = 1'000'000;  // whole prompts in one step: fewer steps, same hits
    const SimRun run = simulate(w, c, constant(0.01));
    std::map<std::tuple<std::int64_t, std::uint64_t, std::int64_t>, std::int64_t> trie;  // (parent, hash id, offset) -> node
    std::int64_t expected = 0, nodes = 0;
    for (const SimRequest& r : w.requests) {
        std::int64_t node = -1;
        bool hitting = true;
        for (std::int64_t j = 0; j < (r.input_tokens - 1) / 16; ++j) {
            const std::int64_t first = j * 16;
            const std::size_t span = static_cast<std::size_t>(first / 512);
            if (span >= r.content_keys.size() || first + 16 > r.input_tokens) break;  // the request's own content from here
            auto [it, inserted] = trie.try_emplace({node, r.content_keys[span], first % 512}, nodes);
            if (inserted) {
                ++nodes;
                hitting = false;
            }
            if (hitting) expected += 16;
            node = it->second;
        }
    }
    CHECK(expected > 1'000'000);  // the count is not vacuous
    CHECK(run.prefix_hit_tokens == expected);
    c.num_gpu_blocks = 4000;
    const SimRun small = simulate(w, c, constant(0.01));
    CHECK(small.prefix_hit_tokens < expected);
    CHECK(small.prefix_hit_tokens > 0);
}

TEST_CASE("Little's law: the time-average of requests in the system equals throughput x mean E2E") {
    SchedulerConfig c;
    c.num_gpu_blocks = 2000;
    c.max_num_seqs = 16;
    const SimRun run = simulate(
        poisson(20'000, 4.0, 200, 50), c, [](const std::vector<SeqWork>& w) { return 0.005 + 0.0004 * static_cast<double>(w.size()); }, false);
    const SimSummary s = summarise(run, {});
    double in_system = 0;
    const std::vector<TimePoint> seconds = per_second(run.timeseries);
    for (const TimePoint& p : seconds) in_system += static_cast<double>(p.running + p.waiting);
    in_system /= static_cast<double>(seconds.size());
    CHECK(in_system == Approx(s.requests_per_s * s.e2e_s.mean).epsilon(0.03));
}

TEST_CASE("the block pool keeps every block referenced or free, and evicts the least recently freed") {
    BlockPool p(4);
    const std::int64_t a = p.allocate(), b = p.allocate();
    p.set_hash(a, 1);
    p.set_hash(b, 2);
    p.release(b);
    p.release(a);  // free queue: 2, 3, b, a
    CHECK(p.consistent());
    CHECK(p.free_count() == 4);
    REQUIRE(p.find(1));
    p.touch(*p.find(1));  // a is referenced again
    CHECK(p.free_count() == 3);
    p.allocate();
    p.allocate();
    p.allocate();  // takes 2, 3, then b: b's content is evicted
    CHECK_FALSE(p.find(2));
    CHECK(p.find(1));
    CHECK(p.consistent());
}

TEST_CASE("goodput counts the requests that meet every SLO, as vllm bench serve --goodput does") {
    SchedulerConfig c;
    c.num_gpu_blocks = 1000;
    c.max_num_seqs = 1;
    Workload w;
    // Service 3 steps of 1 s each; both arrive at 0: the second waits 3 s.
    w.requests.push_back(SimRequest{0.0, 16, 3, {}, 0});
    w.requests.push_back(SimRequest{0.0, 16, 3, {}, 0});
    const SimRun run = simulate(w, c, constant(1.0));
    Slo slo;
    slo.ttft_s = 2.0;
    const SimSummary s = summarise(run, slo);
    CHECK(s.ttft_s.max == Approx(4.0));
    CHECK(*s.slo_attainment == Approx(0.5));
    CHECK(*s.goodput_requests_per_s == Approx(1.0 / 6.0));
    CHECK(s.tpot_s.mean == Approx(1.0));
}

TEST_CASE("a decode batch priced from its size and context sum is mixed_step's price bit for bit, or none") {
    // mixed_step adds, per sequence, whole numbers (bytes per token x context,
    // FLOPs per token pair x (context + 1)) below 2^53, which doubles add
    // exactly in any order: the aggregate must give the same double, not a
    // near one. A sliding window (gemma-2's 4,096 tokens on half its layers)
    // makes each sequence's min(context, window) count: no aggregate then.
    std::mt19937_64 rng(3);
    for (const char* name : {"llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3", "qwen3-8b"}) {
        const ModelSpec m = preset(name);
        CostModelInputs in;
        in.model = &m;
        in.gpu = gpu("h100-sxm");
        in.tp = std::string(name) == "deepseek-v3" || std::string(name) == "llama-3.1-70b" ? 8 : 1;
        const CostModel cm = make_cost_model(in);
        for (int trial = 0; trial < 200; ++trial) {
            std::vector<SeqWork> batch(static_cast<std::size_t>(1 + rng() % 512));
            std::int64_t sum = 0;
            for (SeqWork& s : batch) {
                s = SeqWork{static_cast<std::int64_t>(1 + rng() % 40'000), 1};
                sum += s.cached;
            }
            const std::optional<StepCost> agg = decode_batch_step(cm, static_cast<std::int64_t>(batch.size()), sum);
            INFO(name << ", batch " << batch.size() << ", context sum " << sum);
            REQUIRE(agg);
            CHECK(agg->total_s == mixed_step(cm, batch).total_s);
        }
    }
    const ModelSpec g = preset("gemma-2-9b");
    CostModelInputs in;
    in.model = &g;
    in.gpu = gpu("h100-sxm");
    CHECK_FALSE(decode_batch_step(make_cost_model(in), 8, 8 * 1000));
}

namespace {

// Two runs of one workload, every figure the report shows compared exactly.
void expect_same_run(const SimRun& a, const SimRun& b) {
    REQUIRE(a.requests.size() == b.requests.size());
    std::size_t differing = 0;
    for (std::size_t i = 0; i < a.requests.size(); ++i) {
        const RequestRecord &x = a.requests[i], &y = b.requests[i];
        if (x.arrival_s != y.arrival_s || x.scheduled_s != y.scheduled_s || x.first_token_s != y.first_token_s || x.finish_s != y.finish_s ||
            x.cached_tokens != y.cached_tokens || x.preemptions != y.preemptions || x.rejected != y.rejected)
            ++differing;
    }
    CHECK(differing == 0);
    // The ITL multiset: the sorted, merged (gap, count) runs.
    const auto sorted_runs = [](const GapCounts& g) {
        std::vector<std::pair<double, std::int64_t>> v = g.runs(), merged;
        std::sort(v.begin(), v.end());
        for (const auto& p : v)
            if (!merged.empty() && merged.back().first == p.first) merged.back().second += p.second;
            else merged.push_back(p);
        return merged;
    };
    CHECK(a.itl_s.size() == b.itl_s.size());
    CHECK(sorted_runs(a.itl_s) == sorted_runs(b.itl_s));
    REQUIRE(a.timeseries.size() == b.timeseries.size());
    std::size_t differing_points = 0;
    for (std::size_t i = 0; i < a.timeseries.size(); ++i) {
        const TimePoint &p = a.timeseries[i], &q = b.timeseries[i];
        if (p.t_s != q.t_s || p.running != q.running || p.waiting != q.waiting || p.kv_cache_usage != q.kv_cache_usage ||
            p.prompt_tokens_per_s != q.prompt_tokens_per_s || p.generation_tokens_per_s != q.generation_tokens_per_s)
            ++differing_points;
    }
    CHECK(differing_points == 0);
    CHECK(a.steps == b.steps);
    CHECK(a.preemptions == b.preemptions);
    CHECK(a.recomputed_tokens == b.recomputed_tokens);
    CHECK(a.prefix_hit_tokens == b.prefix_hit_tokens);
    CHECK(a.peak_blocks_used == b.peak_blocks_used);
    CHECK(a.end_s == b.end_s);
    const SimSummary s = summarise(a, {}), t = summarise(b, {});
    CHECK(s.itl_s.mean == t.itl_s.mean);
    CHECK(s.itl_s.p99 == t.itl_s.p99);
    CHECK(s.tpot_s.p99 == t.tpot_s.p99);
}

}  // namespace

TEST_CASE("jumping over runs of decode steps gives the run stepping gives, on the bundled traces") {
    // The Azure traces, and Mooncake's with its shared prefixes, on Llama-3.1-8B
    // / H100 with prefix caching on, max_num_seqs low enough to bind (the
    // runs happen while the queue waits for a free seat) and pools small
    // enough to preempt (2,000-8,000 blocks of 16 for prompts of ~1,000 to
    // ~10,000 tokens). Stepping and jumping must agree on every time to the
    // last bit: the jump allocates, caches and advances the clock in
    // stepping's order.
    const ModelSpec m = preset("llama-3.1-8b");
    CostModelInputs in;
    in.model = &m;
    in.gpu = gpu("h100-sxm");
    const CostModel cm = make_cost_model(in);
    const StepPricer price = [&](const std::vector<SeqWork>& w) { return mixed_step(cm, w).total_s; };
    const DecodePricer decode = [&](std::int64_t b, std::int64_t s) -> std::optional<double> {
        auto c = decode_batch_step(cm, b, s);
        return c ? std::optional<double>(c->total_s) : std::nullopt;
    };
    const std::string traces = std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/reference/traces/";
    struct Case {
        const char* file;
        std::int64_t limit, blocks, max_seqs;
        double time_scale;
    };
    for (const Case k : {Case{"azure_2023_conv.csv", 3000, 2000, 32, 1.0}, Case{"azure_2023_code.csv", 2000, 2500, 16, 1.0},
                         Case{"mooncake_conversation.jsonl", 600, 8000, 8, 1.0}}) {
        const Workload w = read_trace(traces + k.file, TraceOptions{"auto", k.time_scale, k.limit});
        SchedulerConfig c;
        c.num_gpu_blocks = k.blocks;
        c.max_num_seqs = k.max_seqs;
        c.max_num_batched_tokens = 2048;
        c.jump_decode_runs = false;
        const SimRun stepped = simulate(w, c, price, decode, true);
        c.jump_decode_runs = true;
        const SimRun jumped = simulate(w, c, price, decode, true);
        INFO(k.file << ": " << stepped.steps << " steps, " << stepped.preemptions << " preemptions");
        CHECK(stepped.preemptions > 0);
        CHECK(stepped.decode_run_steps == 0);
        CHECK(jumped.decode_run_steps > jumped.steps / 3);  // the jump did happen, for many steps
        const SimSummary s = summarise(stepped, {});
        CHECK(s.completed + s.rejected == k.limit);
        if (std::string(k.file).starts_with("mooncake")) CHECK(stepped.prefix_hit_tokens > 0);
        expect_same_run(stepped, jumped);
        expect_causal(jumped);
    }
}

TEST_CASE("remembering the blocked queue head's prefix hit gives the run looking it up every step gives") {
    // Mooncake's conversation trace (long prompts sharing prefixes) into
    // pools small enough to keep the queue's head blocked for many steps
    // (4,000 and 2,500 blocks of 16 for prompts of up to ~60,000 tokens),
    // with and without the CPU tier, and with the head's prefix-cache hit
    // looked up again every step (remember_blocked_hit off, vLLM's way)
    // or answered from the remembered one until the pool's watch fires.
    // Every time must agree to the last bit.
    const ModelSpec m = preset("llama-3.1-8b");
    CostModelInputs in;
    in.model = &m;
    in.gpu = gpu("h100-sxm");
    const CostModel cm = make_cost_model(in);
    const StepPricer price = [&](const std::vector<SeqWork>& w) { return mixed_step(cm, w).total_s; };
    const DecodePricer decode = [&](std::int64_t b, std::int64_t s) -> std::optional<double> {
        auto c = decode_batch_step(cm, b, s);
        return c ? std::optional<double>(c->total_s) : std::nullopt;
    };
    const Workload w =
        read_trace(std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/reference/traces/mooncake_conversation.jsonl", TraceOptions{"auto", 1.0, 600});
    for (const auto& [blocks, offload] : {std::pair<std::int64_t, bool>{4000, false}, {2500, false}, {4000, true}}) {
        SchedulerConfig c;
        c.num_gpu_blocks = blocks;
        if (offload) c.cpu_tier = CpuTierConfig{524'288, 2'097'152, 64e9, 0.0};  // 1 TiB of blocks of 16 tokens x 128 KiB (Llama-3.1-8B)
        c.remember_blocked_hit = false;
        const SimRun looked_up = simulate(w, c, price, decode, true);
        c.remember_blocked_hit = true;
        const SimRun remembered = simulate(w, c, price, decode, true);
        INFO(blocks << " blocks, offload " << offload << ": " << remembered.remembered_hits << " lookups remembered");
        CHECK(looked_up.remembered_hits == 0);
        CHECK(remembered.remembered_hits > 1000);  // the head did stay blocked, for many steps
        CHECK(looked_up.prefix_hit_tokens > 0);
        if (offload) CHECK(looked_up.cpu_hit_tokens > 0);
        CHECK(looked_up.cpu_hit_tokens == remembered.cpu_hit_tokens);
        expect_same_run(looked_up, remembered);
    }
}

TEST_CASE("ITL percentiles from gap-and-count runs equal those over the expanded list") {
    // By hand: gaps 0.5 x3, 0.25, 2.0, 0.001 x5 sort to [0.001 x5, 0.25, 0.5 x3, 2.0]
    // (10 tokens). p50 sits at rank 4.5: 0.001 + (0.25 - 0.001) x 0.5 = 0.1255;
    // p90 at rank 8.1: 0.5 + 1.5 x 0.1 = 0.65; the mean (0.005 + 0.25 + 1.5 + 2) / 10.
    GapCounts g;
    g.add(0.5, 3);
    g.push_back(0.25);
    g.push_back(2.0);
    g.add(0.001, 5);
    const Distribution d = distribution(g);
    CHECK(d.count == 10);
    CHECK(d.p50 == Approx(0.1255).epsilon(1e-12));
    CHECK(d.p90 == Approx(0.65).epsilon(1e-12));
    CHECK(d.max == 2.0);
    CHECK(d.mean == Approx(0.3755).epsilon(1e-12));
    // Gaps over nine decades, with ties (the radix sort's passes over the
    // exponent bytes are not skipped): the same percentiles as the list.
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> decades(-6.0, 3.0);
    std::uniform_int_distribution<int> counts(1, 40);
    GapCounts runs;
    std::vector<double> expanded;
    double tie = 0.0125;
    for (int i = 0; i < 20000; ++i) {
        const double gap = i % 7 == 0 ? tie : std::pow(10.0, decades(rng));
        const int n = counts(rng);
        runs.add(gap, n);
        expanded.insert(expanded.end(), static_cast<std::size_t>(n), gap);
    }
    const Distribution a = distribution(runs), b = distribution(expanded);
    CHECK(a.count == b.count);
    CHECK(a.p50 == b.p50);
    CHECK(a.p90 == b.p90);
    CHECK(a.p99 == b.p99);
    CHECK(a.max == b.max);
    CHECK(a.mean == Approx(b.mean).epsilon(1e-9));  // summed in another order
}

// ---- The named invariants (docs/invariants.md) ----
// They hold, step after step, over runs that exercise each part of the vLLM
// engine (preemption, prefix caching, the CPU tier, a pipeline, speculative
// decoding), the same inputs give the same run, and a broken state is
// reported by its invariant's id.

namespace {

// Requests every `gap` seconds sharing a 64-token system prompt (four keys
// of 16 tokens), prompts of 100 to 400 tokens, outputs of 20 to 80.
Workload shared_prefix_workload(std::int64_t n, double gap) {
    Workload w;
    for (std::int64_t i = 0; i < n; ++i) {
        SimRequest q{gap * static_cast<double>(i), 100 + (i * 37) % 300, 20 + (i * 13) % 60, {1, 2, 3, 4}, 16};
        w.requests.push_back(q);
    }
    return w;
}

SchedulerConfig small_pool() {
    SchedulerConfig c;
    c.num_gpu_blocks = 96;  // about 1,500 tokens: the batch preempts
    c.block_size = 16;
    c.max_num_seqs = 16;
    c.max_num_batched_tokens = 256;
    return c;
}

// 1 ms plus 10 us per token, for a step that varies with its work.
const StepPricer per_token = [](const std::vector<SeqWork>& work) {
    double s = 1e-3;
    for (const SeqWork& q : work) s += 1e-5 * static_cast<double>(q.new_tokens);
    return s;
};

bool same_run(const SimRun& a, const SimRun& b) {
    if (a.requests.size() != b.requests.size() || a.steps != b.steps || a.end_s != b.end_s || a.preemptions != b.preemptions) return false;
    for (std::size_t i = 0; i < a.requests.size(); ++i) {
        const RequestRecord &x = a.requests[i], &y = b.requests[i];
        if (x.scheduled_s != y.scheduled_s || x.first_token_s != y.first_token_s || x.finish_s != y.finish_s) return false;
    }
    return a.itl_s.runs() == b.itl_s.runs();
}

}  // namespace

TEST_CASE("INV-1 to INV-7 hold after every step of runs that preempt, hit the prefix cache, offload, pipeline and speculate") {
    const Workload w = shared_prefix_workload(120, 0.002);
    SchedulerConfig c = small_pool();
    SECTION("preemption and prefix caching") {
        const SimRun run = simulate(w, c, per_token, true);
        CHECK(run.preemptions > 0);
        CHECK(run.prefix_hit_tokens > 0);
    }
    SECTION("no prefix caching") {
        c.prefix_caching = false;
        CHECK(simulate(w, c, per_token, true).steps > 0);
    }
    SECTION("the CPU tier") {
        c.cpu_tier = CpuTierConfig{256, 16 * 1024, 1e9, 0};
        CHECK(simulate(w, c, per_token, true).cpu_blocks == 256);
    }
    SECTION("a pipeline of two stages") {
        const StagePricers stages{per_token, per_token};
        CHECK(simulate(w, c, per_token, DecodePricer{}, true, stages).steps > 0);
    }
    SECTION("speculative decoding") {
        c.spec.k = 2;
        c.spec.rates = {0.8, 0.5};
        CHECK(simulate(w, c, per_token, true).spec_verifies > 0);
    }
}

TEST_CASE("INV-8: the same inputs give the same run") {
    const Workload w = shared_prefix_workload(80, 0.002);
    SchedulerConfig c = small_pool();
    c.spec.k = 2;
    c.spec.rates = {0.7, 0.4};
    c.spec.seed = 3;
    CHECK(same_run(simulate(w, c, per_token, true), simulate(w, c, per_token, true)));
}

TEST_CASE("a broken state is reported by its invariant's id") {
    const Workload w = shared_prefix_workload(20, 0.05);
    const SchedulerConfig c = small_pool();
    RequestStates states = request_states(w);
    const DecodePricer no_decode;  // the engine keeps a reference: it must outlive the engine
    VllmEngine e(w, c, per_token, no_decode, true, states);
    for (std::size_t r = 0; r < w.requests.size(); ++r) e.add(r);
    e.advance(0.512, false);  // request 10, which arrived at 0.5 s, is running
    REQUIRE_NOTHROW(check_invariants(e));
    // A request the engine runs now.
    std::size_t r = 0;
    while (r < w.requests.size() && !(states.records[r].scheduled_s >= 0 && states.records[r].finish_s < 0)) ++r;
    REQUIRE(r < w.requests.size());
    REQUIRE(!states.live[r].kv.empty());
    REQUIRE(!states.live[r].kv[0].blocks.empty());

    SECTION("INV-2: scheduled before it arrived") {
        states.records[r].arrival_s = states.records[r].scheduled_s + 1;
        CHECK_THROWS_WITH(check_invariants(e), Catch::Contains("INV-2"));
    }
    SECTION("INV-3: a block-table entry the pool did not count") {
        states.live[r].kv[0].blocks.push_back(states.live[r].kv[0].blocks.front());
        CHECK_THROWS_WITH(check_invariants(e), Catch::Contains("INV-3"));
    }
    SECTION("INV-6: computed tokens without blocks") {
        states.live[r].kv[0].blocks.clear();
        CHECK_THROWS_WITH(check_invariants(e), Catch::Contains("INV-6"));
    }
}
