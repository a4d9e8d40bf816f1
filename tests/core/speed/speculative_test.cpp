// Speculative decoding: expected tokens per step, the speculative step's
// terms derived by hand, and where speculation stops paying.
#include "core/speed/speculative.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/memory/parallel.hpp"
#include "core/model/config_parser.hpp"
#include "core/speed/roofline.hpp"
#include "io/engine_db.hpp"
#include "io/gpu_db.hpp"
#include "speed_fixtures.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

// The seeds' 7B shape: 32 layers x 32 KV heads x 128, 7e9 parameters in fp16 (14e9 B), 524,288 B of KV per token.
ModelSpec shape7b() {
    ManualShape s;
    s.layers = 32;
    s.kv_heads = 32;
    s.head_dim = 128;
    s.params = 7'000'000'000;
    return manual_model(s);
}

}  // namespace

TEST_CASE("expected tokens per step: 1 + a + a^2 + ... + a^K, or the products of per-position rates") {
    // Leviathan et al. 2023, eq. 1: (1 - a^(K+1)) / (1 - a); a = 0.8, K = 3: 1 + 0.8 + 0.64 + 0.512.
    CHECK(expected_tokens_per_step({0.8, 0.8, 0.8}) == Approx(2.952));
    CHECK(expected_tokens_per_step({0.8, 0.8, 0.8}) == Approx((1 - 0.8 * 0.8 * 0.8 * 0.8) / (1 - 0.8)));
    // Conditional rates 0.9, 0.8, 0.5: 1 + 0.9 + 0.9 x 0.8 + 0.9 x 0.8 x 0.5 = 1 + 0.9 + 0.72 + 0.36.
    CHECK(expected_tokens_per_step({0.9, 0.8, 0.5}) == Approx(2.98));
    // Nothing accepted: the bonus token alone; everything accepted: K + 1.
    CHECK(expected_tokens_per_step({0, 0.9}) == Approx(1.0));
    CHECK(expected_tokens_per_step({1, 1, 1, 1}) == Approx(5.0));
}

TEST_CASE("a batch-1 speculative step's terms and speed-up, derived by hand") {
    // 7B shape on the ideal device, context 1,000, EAGLE, K = 3, a = 0.8 (E = 2.952). Every step is memory-bound.
    // Plain decode: (14e9 weights + 1,000 x 524,288 KV read + 524,288 written) / 2e12 = 7.262406144 ms.
    // Verify, 4 new tokens: (14e9 + 524,288,000 + 4 x 524,288) / 2e12 = 7.263192576 ms.
    // One draft pass, one layer of 32 (the manual shape has no separate head): (14e9 / 32 + 1,000 x 16,384
    // + 16,384) / 2e12 = 0.226950192 ms; three of them 0.680850576 ms. Spec step 7.944043152 ms.
    // Speed-up 2.952 x 7.262406144 / 7.944043152 = 2.6987.
    const ModelSpec m = shape7b();
    const CostModelInputs in{&m, ideal_gpu(), WeightFormat{}, std::nullopt, 1, pure(), std::nullopt};
    const CostModel target = make_cost_model(in);
    const CostModel head = make_draft_head_model(in);
    CHECK(head.dense_weight_bytes == Approx(14e9 / 32));
    const SpecStep s = spec_step(target, head, 3, 1, 1000);
    CHECK(s.verify.total_s == Approx(7.263192576e-3));
    CHECK(s.draft_pass.total_s == Approx(0.226950192e-3));
    CHECK(s.total_s == Approx(7.944043152e-3));

    RooflineInputs r;
    r.batches = {1};
    r.context = 1000;
    r.prompt = 100;
    r.output = 10;
    r.spec = SpecInputs{SpecMethod::Eagle, 3, {0.8, 0.8, 0.8}, head, ""};
    const Roofline f = make_roofline(target, r);
    REQUIRE(f.rows.at(0).spec);
    CHECK(f.rows[0].step.total_s == Approx(7.262406144e-3));
    CHECK(f.rows[0].spec->speedup == Approx(2.6987).epsilon(1e-4));
    CHECK(f.rows[0].spec->tokens_per_s_total == Approx(2.952 / 7.944043152e-3));
    CHECK_FALSE(f.spec_break_even_batch);
}

TEST_CASE("speculation stops paying once verification is compute-bound") {
    // Llama-3.1-8B on an H100 SXM at 256 tokens of context: at a large batch the step is compute-bound, and
    // verifying K + 1 = 4 tokens per sequence costs about 4x a plain step's FLOPs for E = 1 + 0.6 + 0.36 +
    // 0.216 = 2.176 tokens kept: the speed-up tends to E / (K + 1) = 0.544, below it with the draft passes.
    auto r = kvplan_run({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "256", "--batch", "1,4096", "--spec-method",
                         "eagle", "--spec-tokens", "3", "--acceptance", "0.6", "--json"});
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["spec"]["expected_tokens_per_step"].get<double>() == Approx(2.176));
    CHECK(j["rows"][0]["spec"]["spec_speedup"].get<double>() > 1.0);
    CHECK(j["rows"][1]["bound"] == "compute");
    const double big = j["rows"][1]["spec"]["spec_speedup"].get<double>();
    CHECK(big < 0.544);
    CHECK(big > 0.4);
    CHECK(j["spec"]["break_even_batch"] == 4096);
    for (const char* key : {"spec_step_s", "verify_s", "draft_s", "expected_tokens_per_step", "tokens_per_s_per_user", "tokens_per_s_total"}) {
        INFO(key);
        CHECK(j["rows"][0]["spec"].contains(key));
    }
}

TEST_CASE("roofline without speculative flags prints no spec fields") {
    auto r = kvplan_run({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--batch", "1", "--json"});
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK_FALSE(j.contains("spec"));
    CHECK_FALSE(j["rows"][0].contains("spec"));
}

TEST_CASE("roofline --spec-method draft and mtp run, and the table says where speculation stops paying") {
    auto d = kvplan_run({"roofline", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4", "--batch", "1,8", "--spec-method", "draft",
                         "--draft-model", "llama-3.1-8b", "--spec-tokens", "4", "--acceptance", "0.7"});
    REQUIRE(d.code == 0);
    CHECK_THAT(d.out, Catch::Contains("Speculative decoding (draft, K = 4"));
    CHECK_THAT(d.out, Catch::Contains("beyond the batches shown"));
    auto m = kvplan_run({"roofline", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--batch", "1", "--spec-method", "mtp", "--spec-tokens",
                         "1", "--acceptance", "0.85", "--json"});
    REQUIRE(m.code == 0);
    CHECK(nlohmann::json::parse(m.out)["spec"]["method"] == "mtp");
}

TEST_CASE("bad speculative flags are usage errors naming the flag") {
    const std::vector<std::string> base{"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> a = base;
        a.insert(a.end(), extra.begin(), extra.end());
        return kvplan_run(a);
    };
    struct Case {
        std::vector<std::string> flags;
        const char* names;
    };
    const std::vector<Case> cases{
        {{"--spec-method", "medusa", "--spec-tokens", "3", "--acceptance", "0.8"}, "--spec-method"},
        {{"--spec-method", "eagle", "--spec-tokens", "0", "--acceptance", "0.8"}, "--spec-tokens"},
        {{"--spec-method", "eagle", "--spec-tokens", "17", "--acceptance", "0.8"}, "--spec-tokens"},
        {{"--spec-method", "eagle", "--spec-tokens", "3", "--acceptance", "1.2"}, "--acceptance"},
        {{"--spec-method", "eagle", "--spec-tokens", "3", "--acceptance", "0.8,0.7"}, "--acceptance"},
        {{"--spec-method", "eagle", "--spec-tokens", "3", "--acceptance", "0.8,x,0.7"}, "--acceptance"},
        {{"--spec-method", "eagle", "--spec-tokens", "3"}, "--acceptance"},
        {{"--spec-method", "eagle", "--acceptance", "0.8"}, "--spec-tokens"},
        {{"--spec-tokens", "3", "--acceptance", "0.8"}, "--spec-method"},
        {{"--spec-method", "draft", "--spec-tokens", "3", "--acceptance", "0.8"}, "--draft-model"},
        {{"--spec-method", "eagle", "--spec-tokens", "3", "--acceptance", "0.8", "--draft-model", "gpt2"}, "--draft-model"},
        {{"--spec-method", "mtp", "--spec-tokens", "1", "--acceptance", "0.8"}, "num_nextn_predict_layers"},
    };
    for (const Case& c : cases) {
        auto r = with(c.flags);
        INFO(c.flags.at(1) + " " + (c.flags.size() > 3 ? c.flags.at(3) : ""));
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Catch::Contains(c.names));
    }
}

TEST_CASE("MTP under DP attention + EP: the verify step is the lockstep step of the dealt ranks, the head one MoE layer of the layout") {
    // DeepSeek-V3, vLLM DP 8 + EP 8 with DeepEP on H200s (tests/core/speed/expert_parallel_step_test.cpp).
    const ModelSpec& m = preset("deepseek-v3");
    ScaleOutInputs si;
    si.tp = 1;
    si.dp = 8;
    si.enable_expert_parallel = true;
    si.deepep_dispatch = true;
    const ScaleOut so = plan_scale_out(m, si);
    const ExpertLayoutInputs li{so, 1.0, bundled_all_to_all_latencies(), 8, find_nic("ib-ndr")};
    const CostModelInputs in{&m, gpu("h200"), WeightFormat{}, std::nullopt, 1, pure(), std::nullopt};
    const CostModel target = make_cost_model(in, li);
    const CostModel head = make_draft_head_model(in, li);
    // One MoE layer: its dispatch and combine are one layer's of the 58, each
    // at DeepEP's EP 8 floor at a small batch: 77 + 114 us.
    CHECK(head.moe_layers == 1);
    CHECK(decode_step(head, 8, 2048).all_to_all_s == Approx(191e-6));
    CHECK(decode_step(target, 8, 2048).all_to_all_s == Approx(58 * 191e-6));
    // 12 sequences over 8 ranks: ranks 0-3 hold 2, ranks 4-7 hold 1; K = 2,
    // so each sequence verifies 3 tokens at its context.
    const std::vector<SeqWork> two(2, SeqWork{2048, 3}), one(1, SeqWork{2048, 3});
    std::vector<const std::vector<SeqWork>*> ranks(8, &one);
    for (int i = 0; i < 4; ++i) ranks[static_cast<std::size_t>(i)] = &two;
    const SpecStep s = spec_step(target, head, 2, 12, 2048);
    CHECK(s.verify.total_s == dp_mixed_step(target, ranks).total_s);
    CHECK(s.draft_pass.total_s == decode_step(head, 12, 2048).total_s);
    CHECK(s.total_s == Approx(s.verify.total_s + 2 * s.draft_pass.total_s));
    // The head's weights on one GPU: its routed experts over EP 8, the rest
    // (attention, shared expert, router, norms, the 2h -> h projection) whole.
    const std::int64_t all = draft_head_weight_bytes(m), per_gpu = draft_head_weight_bytes_per_gpu(m, so);
    ScaleOutInputs tp8;
    tp8.tp = 8;
    const ScaleOut whole = plan_scale_out(m, tp8);  // no layout: TP 8, experts as tensors (EP 1, expert TP 8)
    CHECK(per_gpu < all);
    CHECK(per_gpu > all / 8);
    CHECK(draft_head_weight_bytes_per_gpu(m, whole) == Approx(static_cast<double>(all) / 8).epsilon(1e-6));
}
