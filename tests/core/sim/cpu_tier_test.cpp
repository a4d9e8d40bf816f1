// KV offload to host memory (src/core/sim/cpu_tier.*, engine_offload.cpp):
// the CPU tier's size, its LRU order and link timing, and loads in the
// engine that beat recomputing or lose to it, each figure derived by hand.
#include "core/sim/cpu_tier.hpp"

#include <algorithm>
#include <random>
#include <string>

#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "core/sim/metrics.hpp"
#include "core/sim/scheduler.hpp"
#include "io/trace_reader.hpp"

using namespace kvplan;

namespace {

// 10 ms a step plus 10 us per token computed in it: a prefill of N tokens
// costs 0.01 + 1e-5 N seconds, so recomputing grows with the prompt.
const StepPricer per_token = [](const std::vector<SeqWork>& w) {
    double t = 0.01;
    for (const SeqWork& s : w) t += 1e-5 * static_cast<double>(s.new_tokens);
    return t;
};

// A (at 0 s) and C (at 2 s) share S leading tokens (one content key over
// S tokens); B (at 1 s) shares nothing. Each prompt is S + 16 tokens, each
// output 2 tokens, so a request holds ceil((S + 17) / 16) = S / 16 + 2
// blocks: the pool is exactly that, and B's blocks evict every one of A's
// from the GPU before C arrives.
Workload evicting(std::int64_t shared) {
    Workload w;
    w.requests.push_back(SimRequest{0.0, shared + 16, 2, {1}, shared});
    w.requests.push_back(SimRequest{1.0, shared + 16, 2, {2}, shared});
    w.requests.push_back(SimRequest{2.0, shared + 16, 2, {1}, shared});
    return w;
}

SchedulerConfig evicting_config(std::int64_t shared, double link_bytes_per_s, bool offload) {
    SchedulerConfig c;
    c.num_gpu_blocks = shared / 16 + 2;
    if (offload) c.cpu_tier = CpuTierConfig{1000, 1'000'000, link_bytes_per_s, 0.0};
    return c;
}

double ttft(const SimRun& run, std::size_t i) {
    return run.requests[i].first_token_s - run.requests[i].arrival_s;
}

}  // namespace

TEST_CASE("the CPU tier holds the per-rank share of the size in whole blocks") {
    // Llama-3.1-8B: 131,072 B/token x 16 tokens = 2 MiB a block at TP 1.
    // 64 GiB / 1 rank / 2 MiB = 2^36 / 2^21 = 32,768 blocks.
    CHECK(cpu_tier_blocks(64LL << 30, 1, 2LL << 20) == 32'768);
    // TP 2 halves the block (1 MiB per rank) and the size per rank
    // (vLLM's kv_bytes_per_rank = size / (TP x PP)): 100 GB / 2 = 5 x 10^10 B,
    // / 1,048,576 = 47,683.7 -> 47,683 blocks.
    CHECK(cpu_tier_blocks(100'000'000'000LL, 2, 1LL << 20) == 47'683);
    // 1 MiB holds no block of 2 MiB.
    CHECK_THROWS_AS(cpu_tier_blocks(1LL << 20, 1, 2LL << 20), Error);
    CHECK_THROWS_AS(cpu_tier_blocks(0, 1, 2LL << 20), Error);
}

TEST_CASE("the CPU tier evicts the least recently used block and times each copy on its link direction") {
    // 3 blocks of 10^6 B over 10^9 B/s: each copy takes 1 ms, stores one
    // after another, so keys 1, 2, 3 stored at 0 s are ready at 1, 2, 3 ms.
    CpuTier t(CpuTierConfig{3, 1'000'000, 1e9, 0.0});
    CHECK(t.store(1, 0.0));
    CHECK(t.store(2, 0.0));
    CHECK(t.store(3, 0.0));
    CHECK_FALSE(t.ready(3, 0.0025));
    CHECK(t.ready(3, 0.003));
    CHECK_FALSE(t.store(2, 0.01));  // held: no copy, it becomes the most recent
    CHECK(t.lru_order() == std::vector<std::uint64_t>{1, 3, 2});
    CHECK(t.store(4, 0.01));  // full: 1, the least recent, goes
    CHECK(t.lru_order() == std::vector<std::uint64_t>{3, 2, 4});
    CHECK_FALSE(t.ready(1, 1.0));
    CHECK(t.ready(4, 0.011));  // its link was free again from 3 ms: 10 ms + 1 ms
    // A load of 2 blocks at 1 s ends at 1.002 s; one more at 1 s queues
    // behind it (the host -> GPU direction): 1.003 s. Loaded blocks become recent.
    CHECK(t.load({3, 2}, 1.0) == Approx(1.002).epsilon(1e-12));
    CHECK(t.load({4}, 1.0) == Approx(1.003).epsilon(1e-12));
    CHECK(t.lru_order() == std::vector<std::uint64_t>{3, 2, 4});
    CHECK(t.stored_blocks() == 4);
    CHECK(t.evicted_blocks() == 1);
    CHECK(t.loaded_blocks() == 3);
}

TEST_CASE("the flat LRU keeps the order a linked list keeps, through every store, touch, eviction and load") {
    // A naive model: a vector, least recently used first, searched linearly.
    // 20,000 random operations over 300 keys into 64 blocks, so the index
    // grows, wraps and deletes in every pattern; order and counts must agree.
    CpuTier t(CpuTierConfig{64, 1000, 1e9, 0.0});
    std::vector<std::uint64_t> model;
    std::mt19937_64 rng(11);
    std::int64_t evicted = 0;
    for (int i = 0; i < 20'000; ++i) {
        const std::uint64_t key = rng() % 300 * 0x9e3779b97f4a7c15ULL;  // scattered keys, as block hashes are
        const auto it = std::find(model.begin(), model.end(), key);
        if (rng() % 4 == 0 && it != model.end()) {
            t.load({key}, 0.0);
            model.erase(it);
            model.push_back(key);
        } else {
            CHECK(t.store(key, 0.0) == (it == model.end()));
            if (it != model.end()) model.erase(it);
            else if (model.size() == 64) {
                model.erase(model.begin());
                ++evicted;
            }
            model.push_back(key);
        }
        if (i % 97 == 0) REQUIRE(t.lru_order() == model);
    }
    CHECK(t.lru_order() == model);
    CHECK(t.size() == 64);
    CHECK(t.evicted_blocks() == evicted);
    for (std::uint64_t k : model) CHECK(t.ready(k, 1e9));
}

TEST_CASE("a long shared prefix over a fast link loads faster than it recomputes") {
    // S = 4,096 shared tokens, 256 blocks of 10^6 B over 10^10 B/s.
    // Without offload C recomputes its 4,112-token prompt in one step:
    // TTFT = 0.01 + 1e-5 x 4,112 = 0.05112 s. With it, C waits for the load
    // of 256 blocks, 256 x 10^6 / 10^10 = 0.0256 s, and then computes its
    // last 16 tokens: 0.01 + 1e-5 x 16 = 0.01016 s; TTFT = 0.03576 s.
    const Workload w = evicting(4096);
    const SimRun off = simulate(w, evicting_config(4096, 1e10, false), per_token, true);
    const SimRun on = simulate(w, evicting_config(4096, 1e10, true), per_token, true);
    CHECK(ttft(off, 2) == Approx(0.05112).epsilon(1e-9));
    CHECK(ttft(on, 2) == Approx(0.03576).epsilon(1e-9));
    CHECK(ttft(on, 0) == Approx(ttft(off, 0)).epsilon(1e-12));  // A and B see no difference
    CHECK(on.requests[2].cached_tokens == 4096);
    CHECK(on.cpu_hit_tokens == 4096);
    // Onloaded bytes = hit blocks x block bytes: 256 x 10^6.
    CHECK(on.onload_bytes == 256'000'000);
    // Stores: A and B each 257 full blocks (4,113 tokens computed: 257 x
    // 16 = 4,112 fill them); C only its own block 256, its first 256 are held.
    CHECK(on.offload_bytes == 515'000'000);
    const SimSummary s = summarise(on, {});
    // 3 x 4,112 = 12,336 prompt tokens, 4,096 from the CPU tier, none from the GPU.
    REQUIRE(s.prefix_cache_hit_rate_cpu);
    CHECK(*s.prefix_cache_hit_rate_cpu == Approx(4096.0 / 12336.0));
    CHECK(s.prefix_cache_hit_rate_gpu == 0);
    CHECK_FALSE(summarise(off, {}).prefix_cache_hit_rate_cpu);
    CHECK(s.completed == 3);
}

TEST_CASE("a short prompt over a slow link loads slower than it recomputes") {
    // S = 256 shared tokens: 16 blocks of 10^6 B over 10^8 B/s take 0.16 s
    // to load, then 0.01016 s for the last 16 tokens: TTFT 0.17016 s,
    // against 0.01 + 1e-5 x 272 = 0.01272 s to recompute all 272.
    const Workload w = evicting(256);
    const SimRun off = simulate(w, evicting_config(256, 1e8, false), per_token, true);
    const SimRun on = simulate(w, evicting_config(256, 1e8, true), per_token, true);
    CHECK(ttft(off, 2) == Approx(0.01272).epsilon(1e-9));
    CHECK(ttft(on, 2) == Approx(0.17016).epsilon(1e-9));
    CHECK(ttft(on, 2) > ttft(off, 2));
    CHECK(on.onload_bytes == 16'000'000);
}

TEST_CASE("a CPU copy still in flight is not a hit") {
    // A link of 10^5 B/s makes each 10^6 B store take 10 s: A's first block
    // is on the host only at about 10 s, so C at 2 s finds nothing and recomputes.
    const Workload w = evicting(256);
    const SimRun on = simulate(w, evicting_config(256, 1e5, true), per_token, true);
    CHECK(on.cpu_hit_tokens == 0);
    CHECK(on.onload_bytes == 0);
    CHECK(ttft(on, 2) == Approx(0.01272).epsilon(1e-9));
}

TEST_CASE("Mooncake's conversation trace with a small GPU pool hits in the CPU tier") {
    // 600 requests of the bundled trace on 2,000 blocks of 16: the GPU
    // evicts the conversations' earlier turns, which the CPU tier (50,000
    // blocks of 2 MiB, Llama-3.1-8B's, over PCIe Gen5's 64 GB/s) still holds.
    // Invariants: every request is accounted for, the tiers' hit rates add
    // up to the whole, and each loaded block is one block of bytes.
    Workload w = read_trace(std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/reference/traces/mooncake_conversation.jsonl", {"auto", 1.0, 600});
    SchedulerConfig c;
    c.num_gpu_blocks = 2000;
    c.max_num_batched_tokens = 2048;
    const SimRun off = simulate(w, c, per_token, true);
    c.cpu_tier = CpuTierConfig{50'000, 2LL << 20, 64e9, 0.0};
    const SimRun on = simulate(w, c, per_token, true);
    const SimSummary s = summarise(on, {});
    CHECK(s.completed + s.rejected == 600);
    CHECK(on.cpu_hit_tokens > 0);
    CHECK(on.prefix_hit_tokens > off.prefix_hit_tokens);
    REQUIRE(s.prefix_cache_hit_rate_cpu);
    CHECK(s.prefix_cache_hit_rate_gpu + *s.prefix_cache_hit_rate_cpu == Approx(s.prefix_cache_hit_rate));
    CHECK(on.onload_bytes % (2LL << 20) == 0);
    // Loads at first admission are the CPU hits; a preempted request may load again.
    CHECK(on.onload_bytes / (2LL << 20) * 16 >= on.cpu_hit_tokens);
    if (on.preemptions == 0) CHECK(on.onload_bytes / (2LL << 20) * 16 == on.cpu_hit_tokens);
    for (const RequestRecord& r : on.requests)
        if (!r.rejected) CHECK(r.finish_s >= r.first_token_s);
}
