// The SGLang engine against timelines and budgets derived by hand from
// SGLang's scheduler (python/sglang/srt/managers/scheduler.py,
// schedule_policy.py, schedule_batch.py), its radix cache against an
// independent count, and its invariants (pool accounting, causality,
// determinism) on bundled traces.
#include "core/sim/sglang_scheduler.hpp"

#include <map>
#include <set>

#include <catch2/catch.hpp>

#include "core/sim/metrics.hpp"
#include "core/sim/radix_cache.hpp"
#include "core/sim/scheduler.hpp"
#include "io/trace_reader.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

const std::string kTraces = std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/reference/traces/";

const StepPricer constant(double s) {
    return [s](const std::vector<SeqWork>&) { return s; };
}

// 1 s for a pass that prefills anything, 0.1 s for a decode pass: which kind
// of pass ran shows in the timestamps.
const StepPricer by_kind = [](const std::vector<SeqWork>& w) {
    for (const SeqWork& s : w)
        if (s.new_tokens > 1) return 1.0;
    return 0.1;
};

void expect_causal(const SimRun& run) {
    for (const RequestRecord& r : run.requests) {
        if (r.rejected) continue;
        REQUIRE(r.arrival_s <= r.scheduled_s);
        REQUIRE(r.scheduled_s < r.first_token_s);
        REQUIRE(r.first_token_s <= r.finish_s);
    }
}

}  // namespace

TEST_CASE("a lone SGLang request's TTFT and E2E are its prefill chunks plus output - 1 decode passes") {
    const ModelSpec m = preset("llama-3.1-8b");
    CostModelInputs in;
    in.model = &m;
    in.gpu = gpu("h100-sxm");
    const CostModel cm = make_cost_model(in);
    const StepPricer price = [&](const std::vector<SeqWork>& w) { return mixed_step(cm, w).total_s; };
    SglangConfig c;
    c.max_total_tokens = 100'000;
    c.chunked_prefill_size = 2048;
    Workload w;
    w.requests.push_back(SimRequest{0.5, 3000, 5, {}, 0});
    const SimRun run = simulate_sglang(w, c, price, true);
    // By hand: chunks of 2,048 and 952 tokens (the second samples the first
    // token), then decode passes at contexts 3,000 .. 3,003.
    const double ttft = mixed_step(cm, {{0, 2048}}).total_s + mixed_step(cm, {{2048, 952}}).total_s;
    double e2e = ttft;
    for (std::int64_t ctx = 3000; ctx < 3004; ++ctx) e2e += mixed_step(cm, {{ctx, 1}}).total_s;
    const RequestRecord& r = run.requests[0];
    CHECK(r.scheduled_s == 0.5);
    CHECK(r.first_token_s - r.arrival_s == Approx(ttft).epsilon(1e-12));
    CHECK(r.finish_s - r.arrival_s == Approx(e2e).epsilon(1e-12));
    CHECK(run.steps == 6);
    CHECK(run.peak_blocks_used == 3004);  // the prompt and 4 decoded tokens' KV, token by token
}

TEST_CASE("an SGLang prefill pass runs alone: the running request's decode waits for it") {
    // A (100 + 10 tokens) arrives at 0, B (100 + 2) at 0.35. Passes, priced
    // 1 s with a prefill and 0.1 s without: prefill A [0, 1] (A's first
    // token at 1), B waiting by then; prefill B alone [1, 2] (B's first
    // token at 2; A does not decode in it); then decode A and B [2, 2.1]
    // (B's last token), and A alone until its 10th token: 2.2 .. 2.9.
    SglangConfig c;
    c.max_total_tokens = 10'000;
    Workload w;
    w.requests.push_back(SimRequest{0.0, 100, 10, {}, 0});
    w.requests.push_back(SimRequest{0.35, 100, 2, {}, 0});
    const SimRun run = simulate_sglang(w, c, by_kind, true);
    CHECK(run.requests[0].first_token_s == Approx(1.0));
    CHECK(run.requests[1].scheduled_s == Approx(1.0));
    CHECK(run.requests[1].first_token_s == Approx(2.0));
    CHECK(run.requests[1].finish_s == Approx(2.1));
    CHECK(run.requests[0].finish_s == Approx(2.9));
    CHECK(run.steps == 11);
    CHECK(run.itl_s.runs().front().first == Approx(1.1));  // A's gap across B's prefill
    // vLLM runs B's prefill in A's decode step instead: A's gap is one step.
    SchedulerConfig v;
    v.num_gpu_blocks = 1000;
    const SimRun vllm = simulate(w, v, by_kind, true);
    CHECK(vllm.requests[0].finish_s == Approx(1.0 + 1.0 + 8 * 0.1));  // prefill, the mixed step, 8 decodes
}

TEST_CASE("SGLang's new_token_ratio reservation refuses a prompt that vLLM's free blocks admit") {
    // A pool of 1,000 tokens. A: 100-token prompt, 800 output tokens, at 0.
    // Admitting A: 100 + min(800, 4096) = 900 < 1,000 free: admitted, and its
    // prefill [0, 1] samples its first token. At 1, B (300 + 100, arrived at
    // 0.5) is weighed against free + evictable - A's reservation:
    //   900 - min(800 - 1, 4096) x 0.7 (the initial new_token_ratio) = 900 - 559.3 = 340.7,
    // and B needs 300 + min(100, 4096) = 400 >= 340.7: refused, and the batch
    // is marked full until a running request leaves. A decodes its 799 other
    // tokens one pass each (1 s here): it finishes at 800; B is prefilled
    // [800, 801] and decodes 99 tokens to 900.
    SglangConfig c;
    c.max_total_tokens = 1000;
    Workload w;
    w.requests.push_back(SimRequest{0.0, 100, 800, {}, 0});
    w.requests.push_back(SimRequest{0.5, 300, 100, {}, 0});
    const SimRun run = simulate_sglang(w, c, constant(1.0), true);
    CHECK(run.requests[0].finish_s == Approx(800.0));
    CHECK(run.requests[1].scheduled_s == Approx(800.0));
    CHECK(run.requests[1].first_token_s == Approx(801.0));
    CHECK(run.requests[1].finish_s == Approx(900.0));
    CHECK(run.preemptions == 0);
    // vLLM with the same 1,000 tokens (62 blocks of 16): A holds 7 blocks at
    // 1 s, B's prompt needs 19 of the 55 free, and it is admitted at once.
    SchedulerConfig v;
    v.num_gpu_blocks = 62;
    const SimRun vllm = simulate(w, v, constant(1.0), true);
    CHECK(vllm.requests[1].scheduled_s == Approx(1.0));
    // The control: B with a 200-token prompt needs 300 < 340.7 and is admitted at 1.
    w.requests[1].input_tokens = 200;
    CHECK(simulate_sglang(w, c, constant(1.0), true).requests[1].scheduled_s == Approx(1.0));
}

TEST_CASE("SGLang retracts the request with the fewest output tokens and raises new_token_ratio from what is left") {
    // 1,000 tokens, passes of 1 s. A (10 + 700) and D (10 + 2) arrive at 0:
    // A needs 710 < 1,000, D 12 < 1,000 - 710: one prefill pass [0, 1]; D
    // ends after one decode. B (10 + 400) arrives at 300, when A has 300
    // tokens and the ratio has decayed 299 passes: 0.7 - 299 x 0.602 / 600
    // = 0.400; B needs 410 < free 680 + evictable 11 (D's cached tokens)
    // - 400 x 0.400 = 531: admitted, prefilled [300, 301]. Then each decode
    // pass takes a slot for each: free 670 - 2k before pass k, D's 11
    // evicted at k = 335, and at k = 340 (t = 641) one slot is left: B, with
    // 341 output tokens against A's 640, is retracted (its 340 decoded
    // slots freed; its 10-token prompt stays cached) and the ratio becomes
    // (640 + 20) / 700 = 0.943. B then needs 341 + 59 = 400 against
    // 340 + 10 - 59 x 0.943 = 294: refused, the batch full until A ends at
    // 701. B is prefilled again [701, 702] (341 tokens, its prompt a hit)
    // and decodes its last 58 tokens: 760.
    SglangConfig c;
    c.max_total_tokens = 1000;
    Workload w;
    w.requests.push_back(SimRequest{0.0, 10, 700, {}, 0});
    w.requests.push_back(SimRequest{0.0, 10, 2, {}, 0});
    w.requests.push_back(SimRequest{300.0, 10, 400, {}, 0});
    const SimRun run = simulate_sglang(w, c, constant(1.0), true);
    CHECK(run.requests[1].finish_s == Approx(2.0));
    CHECK(run.requests[2].scheduled_s == Approx(300.0));
    CHECK(run.requests[0].preemptions == 0);
    CHECK(run.requests[2].preemptions == 1);
    CHECK(run.preemptions == 1);
    CHECK(run.recomputed_tokens == 341);
    CHECK(run.requests[0].finish_s == Approx(701.0));
    CHECK(run.requests[2].finish_s == Approx(760.0));
    CHECK(run.steps == 760);
}

TEST_CASE("a small SGLang pool retracts decodes on the Azure conversation trace and serves every request") {
    // 400 requests replayed 20x faster over 20,000 tokens: admission reserves
    // only new_token_ratio of the outputs, the ratio decays, decodes outgrow
    // the pool and are retracted (their prompts stay cached), the ratio is
    // raised again, and every request still completes.
    const Workload w = read_trace(kTraces + "azure_2023_conv.csv", {"auto", 20.0, 400});
    SglangConfig c;
    c.max_total_tokens = 20'000;  // every request (4,176 tokens at most) fits alone
    c.context_len = 20'000;
    const SimRun a = simulate_sglang(w, c, constant(0.02), true);
    const SimSummary s = summarise(a, {});
    CHECK(s.completed == 400);
    CHECK(s.rejected == 0);
    CHECK(s.preemptions > 0);
    CHECK(s.recomputed_tokens > 0);
    CHECK(s.kv_peak_usage <= 1.0);
    for (std::size_t i = 0; i < w.requests.size(); ++i) CHECK(a.requests[i].output_tokens == w.requests[i].output_tokens);
    expect_causal(a);
    // Deterministic: the same inputs give the same run.
    const SimRun b = simulate_sglang(w, c, constant(0.02), true);
    REQUIRE(b.requests.size() == a.requests.size());
    for (std::size_t i = 0; i < a.requests.size(); ++i) CHECK(a.requests[i].finish_s == b.requests[i].finish_s);
    CHECK(a.steps == b.steps);
    CHECK(a.preemptions == b.preemptions);
}

TEST_CASE("SGLang's radix cache hits on the Mooncake conversation trace equal an independent count of seen prefixes") {
    // Each request alone (arrivals 100 s apart, 1 ms passes) in a pool too
    // large to evict: request i's hit is its longest run of leading blocks
    // (hash id and length, 512 tokens each but the last) that an earlier
    // request's prompt began with, at most all but its last token.
    Workload w = read_trace(kTraces + "mooncake_conversation.jsonl", {"auto", 1.0, 1000});
    for (std::size_t i = 0; i < w.requests.size(); ++i) w.requests[i].arrival_s = 100.0 * static_cast<double>(i);
    std::set<std::vector<std::pair<std::uint64_t, std::int64_t>>> seen;
    std::int64_t hits = 0, block_hits = 0, prompts = 0;
    for (const SimRequest& r : w.requests) {
        std::vector<std::pair<std::uint64_t, std::int64_t>> prefix;
        std::int64_t covered = 0, hit = 0;
        bool matching = true;
        for (std::uint64_t key : r.content_keys) {
            const std::int64_t n = std::min<std::int64_t>(512, r.input_tokens - covered);
            if (n <= 0) break;
            prefix.push_back({key, n});
            covered += n;
            if (matching && seen.count(prefix)) hit = covered;
            else matching = false;
            seen.insert(prefix);
        }
        hits += std::min(hit, r.input_tokens - 1);
        block_hits += std::min(hit, r.input_tokens - 1) / 16 * 16;
        prompts += r.input_tokens;
    }
    REQUIRE(hits > 0);
    SglangConfig c;
    c.max_total_tokens = 1'000'000'000;
    c.context_len = 1'000'000;
    // (Invariants off: a check per pass over a tree of 1,000 conversations
    // is slow; the next test checks them on this trace.)
    const SimRun run = simulate_sglang(w, c, constant(0.001), false);
    CHECK(run.prefix_hit_tokens == hits);
    CHECK(run.prompt_tokens == prompts);
    // vLLM's prefix cache hits whole 16-token blocks: the same count, each
    // request's hit floored to a block.
    SchedulerConfig v;
    v.num_gpu_blocks = 100'000'000;
    CHECK(simulate(w, v, constant(0.001), false).prefix_hit_tokens == block_hits);
    CHECK(block_hits < hits);
}

TEST_CASE("on the Mooncake trace at its own pace a small SGLang pool shares, evicts and retracts, and its books balance") {
    // 200 conversations (many at the same instant) over 100,000 tokens: the
    // cache fills, evicts and is shared by requests in flight; prompts longer
    // than max_req_input_len = min(context_len - 1, pool - 1) - 5 = 99,994
    // are rejected, as SGLang's handle_generate_request does.
    const Workload w = read_trace(kTraces + "mooncake_conversation.jsonl", {"auto", 1.0, 200});
    SglangConfig c;
    c.max_total_tokens = 100'000;
    c.context_len = 131'072;
    std::int64_t too_long = 0;
    for (const SimRequest& r : w.requests) too_long += r.input_tokens > 99'994 ? 1 : 0;
    const SimRun a = simulate_sglang(w, c, constant(0.02), true);
    const SimSummary s = summarise(a, {});
    CHECK(s.rejected == too_long);
    CHECK(s.completed == 200 - too_long);
    CHECK(a.prefix_hit_tokens > 0);
    CHECK(s.kv_peak_usage <= 1.0);
    expect_causal(a);
}

TEST_CASE("SGLang's lpm policy admits the longest cached prefix first and holds back a request that would share an uncached one") {
    // One request at a time (max_running_requests 1), passes of 1 s, each
    // request a prefill and one decode. X (blocks 7, 8) runs first and is
    // cached. At 10, P (block 9), Q (7, 8, 5) and R (7) arrive: fcfs serves
    // P, Q, R at 10, 12, 14; lpm sorts by cached prefix, Q (1,024) then R
    // (512) then P (0): 10, 12, 14 for Q, R, P.
    Workload w;
    w.requests = {SimRequest{0, 1024, 2, {7, 8}, 512}, SimRequest{10, 600, 2, {9}, 512}, SimRequest{10, 1500, 2, {7, 8, 5}, 512},
                  SimRequest{10, 700, 2, {7}, 512}};
    SglangConfig c;
    c.max_total_tokens = 100'000;
    c.max_running_requests = 1;
    const SimRun fcfs = simulate_sglang(w, c, constant(1.0), true);
    CHECK(fcfs.requests[1].scheduled_s == 10);
    CHECK(fcfs.requests[2].scheduled_s == 12);
    CHECK(fcfs.requests[3].scheduled_s == 14);
    c.policy = SglangPolicy::Lpm;
    const SimRun lpm = simulate_sglang(w, c, constant(1.0), true);
    CHECK(lpm.requests[2].scheduled_s == 10);
    CHECK(lpm.requests[2].cached_tokens == 1024);
    CHECK(lpm.requests[3].scheduled_s == 12);
    CHECK(lpm.requests[3].cached_tokens == 512);
    CHECK(lpm.requests[1].scheduled_s == 14);
    // In-batch prefix caching: S1, S2 (both block 40, uncached) and S3
    // (block 41) arrive together, two may run. lpm holds S2 back (it would
    // share 512 >= 32 tokens with S1 ahead of it, having cached 0 <= 32) and
    // runs S1 and S3; S2 then finds S1's block cached. fcfs runs S1 and S2
    // together, neither cached.
    Workload s;
    s.requests = {SimRequest{0, 600, 2, {40}, 512}, SimRequest{0, 600, 2, {40}, 512}, SimRequest{0, 600, 2, {41}, 512}};
    c.max_running_requests = 2;
    const SimRun held = simulate_sglang(s, c, constant(1.0), true);
    CHECK(held.requests[2].scheduled_s == 0);
    CHECK(held.requests[1].scheduled_s == 2);
    CHECK(held.requests[1].cached_tokens == 512);
    c.policy = SglangPolicy::Fcfs;
    const SimRun together = simulate_sglang(s, c, constant(1.0), true);
    CHECK(together.requests[1].scheduled_s == 0);
    CHECK(together.requests[1].cached_tokens == 0);
    CHECK(together.requests[2].scheduled_s == 2);
}

TEST_CASE("the radix cache splits where a match ends and evicts unlocked leaves, least recently used first") {
    RadixCache t;
    const std::vector<Segment> x{{1, 4}, {2, 4}}, y{{1, 4}, {3, 4}};
    t.insert(x, 8);
    t.insert(y, 8);
    CHECK(t.total_tokens() == 12);  // the shared 4 once
    const RadixCache::Match m = t.match(x, 6);
    CHECK(m.tokens == 6);  // into the middle of x's second run: split
    CHECK(t.total_tokens() == 12);
    CHECK(t.consistent());
    // Leaves by last access: the part of x's run past the split (inserted
    // first and not reached by the match), then y's tail.
    CHECK(t.evict(1) == 2);
    CHECK(t.evict(1) == 4);
    t.lock(m.node);
    CHECK(t.evictable_tokens() == 0);
    CHECK(t.evict(100) == 0);
    t.unlock(m.node);
    CHECK(t.evict(100) == 6);
    CHECK(t.consistent());
}

TEST_CASE("SGLang's default max_running_requests follows the pool and the context length") {
    // _resolve_max_num_reqs: min(clamp(pool / context_len x 512, 2048, 4096), pool / 2).
    CHECK(sglang_default_max_running_requests(462'000, 131'072) == 2048);    // 1,804 clamped up
    CHECK(sglang_default_max_running_requests(4'000'000, 131'072) == 4096);  // 15,625 clamped down
    CHECK(sglang_default_max_running_requests(3000, 8192) == 1500);          // half the pool
}
