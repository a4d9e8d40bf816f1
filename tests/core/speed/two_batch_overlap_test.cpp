// Two-batch overlap (vLLM --enable-dbo, SGLang --enable-two-batch-overlap;
// docs/scale-out.md, "Two-batch overlap"): each DP rank's batch as two
// micro-batches, one's compute hiding the other's all-to-all. Derived by hand
// from the plain lockstep step of half the batch, and checked against the
// engines' thresholds and a published observation.
#include <algorithm>

#include <catch2/catch.hpp>

#include "core/memory/parallel.hpp"
#include "core/speed/step_cost.hpp"
#include "io/engine_db.hpp"
#include "speed_fixtures.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

const ModelSpec& v3() {
    static const ModelSpec m = preset("deepseek-v3");
    return m;
}

// DeepSeek-V3 as vLLM's DP 8 + EP 8 on 8 H200s, with or without overlap.
CostModel dp8(bool overlap, bool sglang = false) {
    ScaleOutInputs si;
    si.tp = 1;
    si.dp = 8;
    si.enable_expert_parallel = true;
    const ScaleOut so = plan_scale_out(v3(), si);
    ExpertLayoutInputs li{so, 1.0, bundled_all_to_all_latencies(), 8, find_nic("ib-ndr")};
    if (overlap) set_two_batch_overlap(li, sglang);
    return make_cost_model(CostModelInputs{&v3(), gpu("h200"), WeightFormat{}, std::nullopt, 1, pure(), std::nullopt}, li);
}

std::vector<const std::vector<SeqWork>*> all8(const std::vector<SeqWork>& rank) {
    return std::vector<const std::vector<SeqWork>*>(8, &rank);
}

}  // namespace

TEST_CASE("two-batch overlap: the step is the overhead plus twice the busier stream of one micro-batch of half the batch") {
    // 64 sequences a rank decoding at 2,048 tokens: each micro-batch is 32
    // sequences a rank, the plain lockstep step of 32 a rank (h), so by hand
    //   step = h.overhead + 2 x max(max(h.memory, h.compute) + h.all-reduce, h.all-to-all).
    const std::vector<SeqWork> full(64, SeqWork{2048, 1}), half(32, SeqWork{2048, 1});
    const StepCost h = dp_mixed_step(dp8(false), all8(half));
    const StepCost o = dp_mixed_step(dp8(true), all8(full));
    const double body = std::max(h.memory_s, h.compute_s) + h.allreduce_s;
    CHECK(o.overlapped);
    CHECK(o.total_s == Approx(h.overhead_s + 2 * std::max(body, h.all_to_all_s)).epsilon(1e-12));
    // Each micro-batch reads the weights and pays the all-to-all floors again.
    CHECK(o.weight_bytes == Approx(2 * h.weight_bytes));
    CHECK(o.all_to_all_s == Approx(2 * h.all_to_all_s));
    CHECK(o.kv_read_bytes == Approx(2 * h.kv_read_bytes));
    CHECK(o.overlap_hidden_s == Approx(h.overhead_s + 2 * (body + h.all_to_all_s) - o.total_s));
    // The uniform decode step of the roofline agrees (512 = 64 a rank).
    CHECK(decode_step(dp8(true), 512, 2048).total_s == Approx(o.total_s).epsilon(1e-12));
    // Without the flag nothing changes.
    CHECK_FALSE(dp_mixed_step(dp8(false), all8(full)).overlapped);
}

TEST_CASE("two-batch overlap follows the engines' thresholds, and every rank with work must reach them") {
    // vLLM: micro-batches from 32 tokens a rank in a decode-only batch
    // (--dbo-decode-token-threshold), 512 with a prefill in it
    // (--dbo-prefill-token-threshold); SGLang: any batch of 2 tokens.
    const CostModel vllm = dp8(true), sglang = dp8(true, true);
    const std::vector<SeqWork> d31(31, SeqWork{1000, 1}), d32(32, SeqWork{1000, 1});
    CHECK_FALSE(dp_mixed_step(vllm, all8(d31)).overlapped);
    CHECK(dp_mixed_step(vllm, all8(d32)).overlapped);
    const std::vector<SeqWork> p511{{0, 511}}, p512{{0, 512}};
    CHECK_FALSE(dp_mixed_step(vllm, all8(p511)).overlapped);
    CHECK(dp_mixed_step(vllm, all8(p512)).overlapped);
    const std::vector<SeqWork> one{{1000, 1}}, two(2, SeqWork{1000, 1});
    CHECK_FALSE(dp_mixed_step(sglang, all8(one)).overlapped);
    CHECK(dp_mixed_step(sglang, all8(two)).overlapped);
    // One rank below the threshold keeps every rank whole; an idle rank (a
    // dummy batch) does not.
    std::vector<const std::vector<SeqWork>*> mixed = all8(d32);
    mixed[3] = &d31;
    CHECK_FALSE(dp_mixed_step(vllm, mixed).overlapped);
    const std::vector<SeqWork> none;
    mixed[3] = &none;
    CHECK(dp_mixed_step(vllm, mixed).overlapped);
}

TEST_CASE("two-batch overlap on 16 H20s loses at small decode batches and pays at 64 a rank, as DeepEP#390 reports") {
    // deepseek-ai/DeepEP#390 (and sgl-project/sglang#9660): on H20 "a
    // positive throughput gain is only observed at larger batch sizes (e.g.,
    // 64, 128)". SGLang --tp 16 --dp 16 --ep 16 --moe-a2a-backend deepep over
    // 2 nodes, 2,048 tokens of context: at 16 sequences a rank the second
    // weight read costs more than the all-to-all it hides; at 64 a rank the
    // hidden all-to-all wins.
    ScaleOutInputs si;
    si.rules = ScaleOutRules::Sglang;
    si.tp = 16;
    si.dp = 16;
    si.ep = 16;
    si.deepep = true;
    const ScaleOut so = plan_scale_out(v3(), si);
    Efficiency sglang;  // the engine's speed profile, as `roofline --engine sglang` prices
    sglang.profile = find_engine("--engine", "sglang");
    const auto model = [&](bool overlap) {
        ExpertLayoutInputs li{so, 1.0, bundled_all_to_all_latencies(), 8, find_nic("ib-ndr")};
        if (overlap) set_two_batch_overlap(li, true);
        return make_cost_model(CostModelInputs{&v3(), gpu("h20"), WeightFormat{}, std::nullopt, 1, sglang, std::nullopt}, li);
    };
    const CostModel plain = model(false), tbo = model(true);
    CHECK(decode_step(tbo, 16 * 16, 2048).total_s > decode_step(plain, 16 * 16, 2048).total_s);
    CHECK(decode_step(tbo, 64 * 16, 2048).total_s < decode_step(plain, 64 * 16, 2048).total_s);
}
