// recommend(): the search keeps configurations that meet both targets and fit,
// picks the largest batch under the TPOT target, ranks them, and says which
// target binds when nothing qualifies.
#include "core/speed/recommend.hpp"

#include <algorithm>
#include <cmath>

#include <catch2/catch.hpp>

#include "core/memory/capacity.hpp"
#include "core/speed/speculative.hpp"
#include "core/speed/step_cost.hpp"
#include "io/gpu_db.hpp"
#include "report/recommend_report.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

RecommendInputs base(const ModelSpec& m) {
    RecommendInputs in;
    in.model = &m;
    in.gpus = {find_gpu(bundled_gpus(), "h100-sxm"), find_gpu(bundled_gpus(), "a100-sxm-80gb"), find_gpu(bundled_gpus(), "l4")};
    in.context = 8192;
    in.output = 256;
    in.ttft_s = 1.0;
    in.tpot_s = 0.05;
    return in;
}

}  // namespace

TEST_CASE("recommend: every candidate meets both targets and fits, its batch is the largest under the TPOT target") {
    const ModelSpec m = preset("llama-3.1-8b");
    RecommendInputs in = base(m);
    Recommendation r = recommend(in);
    REQUIRE_FALSE(r.candidates.empty());
    CHECK(r.binding.empty());
    for (const Candidate& c : r.candidates) {
        INFO(c.gpu << " tp " << c.tp);
        CHECK(c.ttft_s <= in.ttft_s);
        CHECK(c.tpot_s <= in.tpot_s);
        CHECK(c.batch <= c.max_requests);
        // One more sequence would either not fit or miss the TPOT target.
        if (c.batch < c.max_requests) {
            const CostModel cm =
                make_cost_model(CostModelInputs{&m, find_gpu(bundled_gpus(), c.gpu), in.weights, std::nullopt, c.tp, in.efficiency, std::nullopt});
            CHECK(decode_step(cm, c.batch + 1, in.context).total_s > in.tpot_s);
        }
        CHECK_THAT(vllm_flags(c), Catch::Contains("--tensor-parallel-size " + std::to_string(c.tp)) &&
                                      Catch::Contains("--max-num-seqs " + std::to_string(c.batch)) && Catch::Contains("--max-model-len 8192"));
    }
    // Best first by tokens/s per GPU.
    for (std::size_t i = 1; i < r.candidates.size(); ++i) CHECK(r.candidates[i - 1].tokens_per_s_per_gpu >= r.candidates[i].tokens_per_s_per_gpu);
}

TEST_CASE("recommend ranks by cost per million tokens when prices are given") {
    const ModelSpec m = preset("llama-3.1-8b");
    RecommendInputs in = base(m);
    in.prices = {{"h100-sxm", 4.0}, {"a100-sxm-80gb", 1.0}, {"l4", 0.5}};
    Recommendation r = recommend(in);
    REQUIRE(r.candidates.size() >= 2);
    for (std::size_t i = 1; i < r.candidates.size(); ++i)
        CHECK(*r.candidates[i - 1].usd_per_million_tokens <= *r.candidates[i].usd_per_million_tokens);
    // $/M tokens = price x tp / 3600 / (batch / tpot) x 1e6.
    const Candidate& c = r.candidates.front();
    CHECK(*c.usd_per_million_tokens == Approx(in.prices[c.gpu] * c.tp / 3600.0 / (c.batch / c.tpot_s) * 1e6));
}

TEST_CASE("recommend says which target binds when nothing qualifies") {
    const ModelSpec m = preset("llama-3.1-8b");
    RecommendInputs in = base(m);
    in.ttft_s = 1e-4;  // no prefill of 7,936 tokens takes 0.1 ms
    Recommendation r = recommend(in);
    CHECK(r.candidates.empty());
    CHECK(r.binding == "ttft");
    REQUIRE(r.best_ttft);
    in.ttft_s = 10;
    in.tpot_s = 1e-4;  // no decode step takes 0.1 ms
    r = recommend(in);
    CHECK(r.binding == "tpot");
    in.ttft_s = 1e-4;
    CHECK(recommend(in).binding == "both");
    // DeepSeek-V3 (fp8, 671 B parameters) does not fit on up to 2 L4s at all.
    const ModelSpec big = preset("deepseek-v3");
    RecommendInputs b = base(big);
    b.gpus = {find_gpu(bundled_gpus(), "l4")};
    b.max_gpus = 2;
    Recommendation none = recommend(b);
    CHECK(none.fitting == 0);
    CHECK(none.binding == "memory");
}

TEST_CASE("recommend fills 8 H100s with an 8B model as TP 1 x DP 8, at 8 times one replica's throughput") {
    // Llama-3.1-8B on one H100 (80 GiB) at 8,192 tokens: bf16 weights are
    // 16.1 GB, a request's KV cache is 32 layers x 8 KV heads x 128 x 2 (K, V)
    // x 2 B = 131,072 B per token x 8,192 = 1 GiB, so vLLM's 0.9 x 80 GiB
    // holds dozens of requests. TTFT is a 7,936-token prefill, 2 x 8.0e9 x
    // 7,936 = 1.3e14 FLOPs at under 1e15 FLOP/s: well under 1 s; TPOT at
    // batch 1 reads 16 GB at about 3 TB/s: about 6 ms, under 50 ms. TP 1
    // meets both targets, so it is the smallest TP, and 8 GPUs hold 8 / 1 = 8
    // replicas: the throughput is 8 x batch / TPOT, per GPU batch / TPOT.
    const ModelSpec m = preset("llama-3.1-8b");
    RecommendInputs in = base(m);
    in.gpus = {find_gpu(bundled_gpus(), "h100-sxm")};
    in.num_gpus = 8;
    const Recommendation r = recommend(in);
    REQUIRE(r.candidates.size() == 1);  // one per device: its smallest TP that meets both targets
    const Candidate& best = r.candidates.front();
    CHECK(best.tp == 1);
    CHECK(best.dp == 8);
    CHECK(best.gpus() == 8);
    CHECK(best.tokens_per_s == Approx(8.0 * best.batch / best.tpot_s));
    CHECK(best.tokens_per_s_per_gpu == Approx(best.batch / best.tpot_s));
    // One replica alone (no --num-gpus) has the same batch and latency and an eighth of the throughput.
    in.num_gpus = 0;
    const Recommendation one = recommend(in);
    REQUIRE(one.candidates.size() == 1);
    CHECK(one.candidates.front().dp == 1);
    CHECK(one.candidates.front().batch == best.batch);
    CHECK(one.candidates.front().ttft_s == best.ttft_s);
    CHECK(best.tokens_per_s == Approx(8.0 * one.candidates.front().tokens_per_s));
    // TP 2, 4 and 8 also meet both targets; they are counted, not listed.
    CHECK(r.larger_tp_meeting == 3);
    CHECK(r.rejected.empty());
    // The printed commands say so.
    CHECK_THAT(vllm_flags(best), Catch::StartsWith("--tensor-parallel-size 1 --data-parallel-size 8 "));
    CHECK_THAT(sglang_flags(best), Catch::StartsWith("--tp 1 --dp 8 "));
}

TEST_CASE("recommend names the targets each rejected configuration misses") {
    const ModelSpec m = preset("llama-3.1-8b");
    RecommendInputs in = base(m);
    in.tpot_s = 0.008;  // about what batch 1 takes on an H100 at TP 1; slower devices miss it
    const Recommendation r = recommend(in);
    REQUIRE_FALSE(r.rejected.empty());
    for (const Candidate& c : r.rejected) {
        INFO(c.gpu << " tp " << c.tp);
        REQUIRE_FALSE(c.missed.empty());
        const bool fits = c.max_requests >= 1;
        CHECK((c.missed.front() == Target::Memory) == !fits);
        if (!fits) continue;
        CHECK((std::find(c.missed.begin(), c.missed.end(), Target::Ttft) != c.missed.end()) == (c.ttft_s > in.ttft_s));
        CHECK((std::find(c.missed.begin(), c.missed.end(), Target::Tpot) != c.missed.end()) == (c.tpot_s > in.tpot_s));
    }
    // Closest first: configurations that fit before those that do not.
    for (std::size_t i = 1; i < r.rejected.size(); ++i)
        CHECK_FALSE((r.rejected[i - 1].missed.front() == Target::Memory && r.rejected[i].missed.front() != Target::Memory));
}

TEST_CASE("recommend --spec-method eagle: TPOT is a speculative step over E tokens, the head's weights and KV come out of the pool") {
    // Llama-3.1-8B on one H100 SXM at 8,192 tokens, a 10 ms TPOT target.
    // Plain decode needs TP 2 for it; an EAGLE head with K = 3 drafts at
    // acceptance 0.8, 0.7, 0.6 keeps E = 1 + 0.8 + 0.8 x 0.7 + 0.8 x 0.7 x 0.6
    // = 2.696 tokens a step, so TP 1 meets it.
    const ModelSpec m = preset("llama-3.1-8b");
    RecommendInputs in = base(m);
    in.gpus = {find_gpu(bundled_gpus(), "h100-sxm")};
    in.tpot_s = 0.010;
    const Recommendation plain = recommend(in);
    REQUIRE_FALSE(plain.candidates.empty());
    CHECK(plain.candidates.front().tp == 2);
    in.spec = RecommendSpec{SpecMethod::Eagle, 3, {0.8, 0.7, 0.6}, nullptr, ""};
    const Recommendation r = recommend(in);
    REQUIRE_FALSE(r.candidates.empty());
    const Candidate& c = r.candidates.front();
    CHECK(c.tp == 1);
    CHECK(c.spec_method == "eagle");
    CHECK(c.spec_tokens == 3);
    const CostModelInputs target{&m, in.gpus.front(), in.weights, in.kv_dtype, 1, in.efficiency, std::nullopt};
    const CostModel cost = make_cost_model(target);
    const CostModel head = make_draft_head_model(target);
    const double e = 2.696;
    CHECK(c.tpot_s == Approx(spec_step(cost, head, 3, c.batch, 8192).total_s / e).epsilon(1e-12));
    CHECK(c.tpot_s <= in.tpot_s);
    // The largest such batch, unless memory stops it first.
    if (c.batch < c.max_requests) CHECK(spec_step(cost, head, 3, c.batch + 1, 8192).total_s / e > in.tpot_s);
    // Memory: the head is one decoder layer (218,103,808 matrix parameters
    // and its two 4,096-wide norms), the 2 x 4,096 -> 4,096 projection
    // (33,554,432) and one more norm: 251,670,528 parameters, 503,341,056 B
    // in bf16; its
    // one attention layer caches 8 KV heads x 128 x 2 x 2 B = 4,096 B a token
    // beside the target's 131,072. Plain TP 1 holds R requests at 8,192
    // tokens in a pool of P bytes: with the head, floor(R x (P - 503,341,056)
    // / P x 131,072 / 135,168).
    CHECK(draft_head_weight_bytes(m) == 503'341'056);
    CHECK(proposer_kv_bytes_per_token(SpecMethod::Eagle, m, nullptr, 1, Dtype::Bf16) == 4'096);
    CapacityInputs cap;
    cap.gpu = in.gpus.front();
    cap.engine = Engine::Vllm;
    cap.contexts = {8192};
    cap.max_model_len = 8192;
    cap.longest_lengths = false;
    const CapacityPlan plan = plan_capacity(m, cap);
    const double pool = static_cast<double>(plan.budget.kv_pool_bytes);
    const double requests = static_cast<double>(plan.rows.at(0).max_requests_replica);
    CHECK(c.max_requests == static_cast<std::int64_t>(std::floor(requests * (pool - 503'341'056.0) / pool * 131'072.0 / 135'168.0)));
    CHECK(c.max_requests < plan.rows.at(0).max_requests_replica);
}
