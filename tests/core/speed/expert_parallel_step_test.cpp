// The step of one DP rank under data-parallel attention + expert
// parallelism (docs/scale-out.md, "Step cost"): DeepSeek-V3 on 8 x H200,
// vLLM --tp 1 --dp 8 --enable-expert-parallel --all2all-backend
// deepep_low_latency (vLLM's default dispatch, all-gather + reduce-scatter,
// is tests/core/speed/collectives_test.cpp's). Every figure is derived by
// hand in the comments from the config (256 routed experts, 8 per token,
// hidden 7168, 58 MoE layers of 61: first_k_dense_replace 3), the
// datasheet (H200 NVLink 450 GB/s per direction) and DeepEP's published
// low-latency times (models/interconnects.json: EP 8 dispatch 77 us,
// combine 114 us).
#include <cmath>
#include <limits>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "core/error.hpp"
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

ScaleOut vllm_dp8_ep8() {
    ScaleOutInputs in;
    in.tp = 1;
    in.dp = 8;
    in.enable_expert_parallel = true;
    in.deepep_dispatch = true;
    return plan_scale_out(v3(), in);
}

CostModel plain(std::int64_t tp = 1) {
    return make_cost_model(CostModelInputs{&v3(), gpu("h200"), WeightFormat{}, std::nullopt, tp, pure(), std::nullopt});
}

CostModel layout(const ScaleOut& so, double imbalance = 1.0) {
    const CostModelInputs in{&v3(), gpu("h200"), WeightFormat{}, std::nullopt, so.attention_tp, pure(), std::nullopt};
    return make_cost_model(in, ExpertLayoutInputs{so, imbalance, bundled_all_to_all_latencies(), 8, find_nic("ib-ndr")});
}

// (31/32)^n: a local expert missed by n tokens that each pick 8 of 256.
double miss(double n) {
    return std::pow(1.0 - 8.0 / 256.0, n);
}

}  // namespace

TEST_CASE("DeepSeek-V3 DP 8 + EP 8 on H200: 32 experts per GPU, one whole expert of a layer per slot") {
    const ScaleOut so = vllm_dp8_ep8();
    CHECK(so.ep == 8);
    CHECK(so.attention_tp == 1);
    CHECK(so.experts_per_gpu == 32);  // 256 / 8
    const CostModel m = layout(so);
    CHECK(m.moe_layers == 58);  // 61 layers, the first 3 dense
    CHECK(m.layout.local_experts == 32);
    // TP 1 attention: a whole expert per slot, as the plain TP-1 model has it.
    CHECK(m.layout.expert_bytes_per_gpu == Approx(plain().expert_bytes));
    // fp8 dispatch: 7168 B + one fp32 scale per 128 channels (56 x 4 = 224 B); bf16 combine 2 x 7168.
    CHECK(m.layout.dispatch_bytes_per_copy == 7392);
    CHECK(m.layout.combine_bytes_per_copy == 14336);
    CHECK(m.layout.dispatch_latency_s == Approx(77e-6));
    CHECK(m.layout.combine_latency_s == Approx(114e-6));
}

TEST_CASE("DeepSeek-V3 DP 8 + EP 8 at batch 64: 8 sequences a rank, 64 token-expert pairs, 27.8 experts read") {
    const CostModel m = layout(vllm_dp8_ep8());
    const StepCost s = decode_step(m, 64, 2560);
    CHECK(s.rank_sequences == 8);               // 64 / 8 DP ranks
    CHECK(s.rank_expert_tokens == Approx(64));  // 64 tokens x 8 experts / 8 EP ranks
    // 32 x (1 - (31/32)^64) = 32 x (1 - 0.13108) = 27.805 distinct local experts per MoE layer.
    CHECK(s.experts_read == Approx(32 * (1 - miss(64))));
    CHECK(s.experts_read == Approx(27.805).epsilon(1e-4));
    CHECK(s.expert_weight_bytes == Approx(58 * s.experts_read * plain().expert_bytes));
    // 7/8 of the 64 pairs cross NVLink: 56 x (7392 + 14336) = 1,216,768 B a layer, x 58 = 70,572,544 B.
    CHECK(s.all_to_all_bytes == Approx(70'572'544));
    // 56 x 7392 B / 450 GB/s = 0.92 us < 77 us: each call costs DeepEP's published time, 58 x (77 + 114) us = 11.078 ms.
    CHECK(s.all_to_all_s == Approx(58 * (77e-6 + 114e-6)));
    CHECK(s.total_s == Approx(std::max(s.memory_s, s.compute_s) + s.overhead_s + s.allreduce_s + s.all_to_all_s));
    // Attention TP 1: no all-reduce.
    CHECK(s.allreduce_s == 0);
}

TEST_CASE("DeepSeek-V3 DP 8 + EP 8 at batch 512: 64 sequences a rank, every local expert read") {
    const CostModel m = layout(vllm_dp8_ep8());
    const StepCost s = decode_step(m, 512, 2560);
    CHECK(s.rank_sequences == 64);
    CHECK(s.rank_expert_tokens == Approx(512));  // 512 x 8 / 8
    // 32 x (1 - (31/32)^512): (31/32)^512 = e^(512 ln 0.96875) = e^-16.26 = 8.7e-8.
    CHECK(s.experts_read == Approx(32).epsilon(1e-6));
    // 448 remote pairs x 21,728 B x 58 = 564,580,352 B; 448 x 7392 / 450e9 = 7.4 us, still under 77 us.
    CHECK(s.all_to_all_bytes == Approx(564'580'352));
    CHECK(s.all_to_all_s == Approx(58 * (77e-6 + 114e-6)));
    // The KV: this rank's 64 sequences of 2,560 tokens, 70,272 B a token (61 x 576 x 2, MLA).
    CHECK(s.kv_read_bytes == Approx(64.0 * 2560 * 70'272));
}

TEST_CASE("expert imbalance 1.5 at batch 64: the busiest rank reads 2.68 more experts a layer") {
    const CostModel even = layout(vllm_dp8_ep8());
    const CostModel skew = layout(vllm_dp8_ep8(), 1.5);
    const StepCost a = decode_step(even, 64, 2560);
    const StepCost b = decode_step(skew, 64, 2560);
    CHECK(b.rank_expert_tokens == Approx(96));  // 1.5 x 64
    // Memory-bound at 8 sequences a rank: the step grows by the extra expert reads only,
    // 58 x 32 x ((31/32)^64 - (31/32)^96) = 58 x 2.676 expert slots, over 4.8 TB/s.
    REQUIRE_FALSE(a.compute_bound);
    REQUIRE_FALSE(b.compute_bound);
    const double extra_experts = 32 * (miss(64) - miss(96));
    CHECK(extra_experts == Approx(2.676).epsilon(1e-3));
    const double extra_s = 58 * extra_experts * plain().expert_bytes / 4.8e12;
    CHECK(b.total_s - a.total_s == Approx(extra_s + (b.all_to_all_s - a.all_to_all_s)));
    // Both a2a calls stay at DeepEP's floor: 84 x 7392 B / 450 GB/s = 1.4 us.
    CHECK(b.all_to_all_s == Approx(a.all_to_all_s));
    CHECK(b.all_to_all_bytes == Approx(1.5 * a.all_to_all_bytes));
}

TEST_CASE("DP 1 and EP 1 price today's step exactly") {
    ScaleOutInputs in;
    in.tp = 8;
    const ScaleOut so = plan_scale_out(v3(), in);
    CHECK(so.ep == 1);
    const CostModel with = layout(so);
    const CostModel without = plain(8);
    CHECK_FALSE(with.layout.active());
    for (std::int64_t b : {1, 64, 512}) {
        const StepCost x = decode_step(with, b, 2560);
        const StepCost y = decode_step(without, b, 2560);
        CHECK(x.total_s == y.total_s);
        CHECK(x.bytes() == y.bytes());
        CHECK(x.all_to_all_s == 0);
    }
    CHECK(prefill_step(with, 1, 2048).total_s == prefill_step(without, 1, 2048).total_s);
}

TEST_CASE("an expert imbalance below 1 or not a number is refused") {
    CHECK_THROWS_WITH(layout(vllm_dp8_ep8(), 0.9), Catch::Contains("--expert-imbalance") && Catch::Contains(">= 1"));
    CHECK_THROWS_AS(layout(vllm_dp8_ep8(), std::numeric_limits<double>::quiet_NaN()), Error);
    CHECK_THROWS_AS(layout(vllm_dp8_ep8(), std::numeric_limits<double>::infinity()), Error);
    CHECK_NOTHROW(check_expert_imbalance(1.0));
}

TEST_CASE("an EP size that does not divide DeepSeek-V3's 256 experts is refused") {
    ScaleOutInputs in;
    in.tp = 1;
    in.dp = 6;
    in.enable_expert_parallel = true;  // EP 6
    CHECK_THROWS_WITH(plan_scale_out(v3(), in), Catch::Contains("EP 6 does not divide the 256 routed experts"));
}

// Two nodes of 8 H200: vLLM --dp 16 --enable-expert-parallel (DeepEP), NDR
// InfiniBand (50 GB/s a GPU per direction) between the nodes; DeepEP's
// published EP 16 floor is 118 us dispatch, 195 us combine.
namespace {

CostModel two_nodes(std::int64_t gpus_per_node, const Nic& nic = find_nic("ib-ndr")) {
    ScaleOutInputs si;
    si.tp = 1;
    si.dp = 16;
    si.enable_expert_parallel = true;
    si.deepep_dispatch = true;
    const ScaleOut so = plan_scale_out(v3(), si);
    const CostModelInputs in{&v3(), gpu("h200"), WeightFormat{}, std::nullopt, 1, pure(), std::nullopt};
    return make_cost_model(in, ExpertLayoutInputs{so, 1.0, bundled_all_to_all_latencies(), gpus_per_node, nic});
}

}  // namespace

TEST_CASE("DP 16 + EP 16 over two nodes of 8: half of a rank's pairs cross the NIC, and at 256 a rank the NIC sets the all-to-all") {
    const CostModel m = two_nodes(8);
    CHECK(m.layout.nodes == 2);
    CHECK(m.layout.gpus_per_node == 8);
    CHECK(m.layout.nic_bytes_per_s == 50e9);
    // Batch 4,096 = 256 a rank: 4,096 x 8 / 16 = 2,048 pairs on the busiest rank;
    // 7 of its 15 peers in its node (896 pairs), 8 behind the NIC (1,024 pairs).
    const StepCost s = decode_step(m, 4096, 2560);
    CHECK(s.rank_expert_tokens == Approx(2048));
    // Per layer (896 + 1,024) x (7,392 + 14,336) B = 41,717,760 B, x 58 layers.
    CHECK(s.all_to_all_bytes == Approx(58.0 * 41'717'760));
    CHECK(s.all_to_all_nic_bytes == Approx(58.0 * 1024 * 21'728));  // 1,290,469,376 B
    // Dispatch: max(118 us, 896 x 7,392 / 450e9 = 14.7 us, 1,024 x 7,392 / 50e9 = 151.39 us) = 151.39 us;
    // combine: max(195 us, 1,024 x 14,336 / 50e9 = 293.60 us) = 293.60 us; x 58 = 25.81 ms.
    CHECK(s.all_to_all_s == Approx(58 * (1024 * 7392 / 50e9 + 1024 * 14336 / 50e9)));
    CHECK(s.all_to_all_s == Approx(25.809e-3).epsilon(1e-4));
    // Batch 2,048 = 128 a rank (DeepEP's published load): 512 pairs over the
    // NIC take 75.7 and 146.8 us, under the floor, so the floor holds: 58 x 313 us.
    CHECK(decode_step(m, 2048, 2560).all_to_all_s == Approx(58 * 313e-6));
}

TEST_CASE("the same 16 GPUs on one scale-up link send nothing over the NIC") {
    const CostModel m = two_nodes(16);
    CHECK(m.layout.nodes == 1);
    const StepCost s = decode_step(m, 4096, 2560);
    CHECK(s.all_to_all_nic_bytes == 0);
    // 15/16 of 2,048 pairs over NVLink: 1,920 x 7,392 / 450e9 = 31.5 us < 118 us, so the floors: 58 x 313 us.
    CHECK(s.all_to_all_bytes == Approx(58.0 * 1920 * 21'728));
    CHECK(s.all_to_all_s == Approx(58 * 313e-6));
    // Not given (0): one link, the same step.
    CHECK(decode_step(two_nodes(0), 4096, 2560).all_to_all_s == Approx(s.all_to_all_s));
}

TEST_CASE("a layout over several nodes without a NIC is refused") {
    CHECK_THROWS_WITH(two_nodes(8, Nic{}), Catch::Contains("needs the NIC between them (--nic)"));
}

// The simulator's lockstep step (dp_mixed_step): one batch per DP rank.
TEST_CASE("dp_mixed_step: eight equal decode batches of 8 price as decode_step at batch 64") {
    const CostModel m = layout(vllm_dp8_ep8());
    const std::vector<SeqWork> rank(8, SeqWork{2560, 1});
    const std::vector<const std::vector<SeqWork>*> ranks(8, &rank);
    const StepCost lock = dp_mixed_step(m, ranks);
    const StepCost s = decode_step(m, 64, 2560);
    CHECK(lock.rank_sequences == 8);
    CHECK(lock.rank_expert_tokens == Approx(s.rank_expert_tokens));
    CHECK(lock.all_to_all_bytes == Approx(s.all_to_all_bytes));
    CHECK(lock.kv_read_bytes == Approx(s.kv_read_bytes));
    CHECK(lock.total_s == Approx(s.total_s).epsilon(1e-12));
}

TEST_CASE("dp_mixed_step: the slowest rank sets the step, the experts see every rank's tokens") {
    const CostModel m = layout(vllm_dp8_ep8());
    // Rank 0 decodes 8 sequences at 32,768 tokens; the other seven 8 at 256.
    const std::vector<SeqWork> heavy(8, SeqWork{32768, 1}), light(8, SeqWork{256, 1});
    std::vector<const std::vector<SeqWork>*> ranks(8, &light);
    ranks[0] = &heavy;
    const StepCost lock = dp_mixed_step(m, ranks);
    // Rank 0's KV: 8 x 32,768 tokens x 70,272 B (61 x 576 x 2, MLA); its attention is the pace.
    CHECK(lock.kv_read_bytes == Approx(8.0 * 32768 * 70'272));
    // The experts' pairs are the 64 replica tokens' (64 x 8 / 8), as at batch 64.
    CHECK(lock.rank_expert_tokens == Approx(64));
    CHECK(lock.total_s > decode_step(m, 64, 256).total_s);
    CHECK(lock.total_s == Approx(dp_mixed_step(m, std::vector<const std::vector<SeqWork>*>(8, &heavy)).total_s));
    // An idle rank runs a dummy batch: seven idle ranks leave rank 0's step
    // with its own 8 tokens of experts' pairs (8 x 8 / 8).
    const std::vector<SeqWork> none;
    std::vector<const std::vector<SeqWork>*> alone(8, &none);
    alone[0] = &heavy;
    const StepCost one = dp_mixed_step(m, alone);
    CHECK(one.rank_expert_tokens == Approx(8));
    CHECK(one.kv_read_bytes == lock.kv_read_bytes);
    CHECK(one.total_s < lock.total_s);
}

TEST_CASE("dp_mixed_step refuses a plain cost model and a wrong number of ranks") {
    const std::vector<SeqWork> rank(1, SeqWork{100, 1});
    CHECK_THROWS_AS(dp_mixed_step(plain(), {&rank}), std::logic_error);
    CHECK_THROWS_AS(dp_mixed_step(layout(vllm_dp8_ep8()), {&rank, &rank}), std::logic_error);
}

TEST_CASE("Kimi-K2 DP 16 + EP 16 over two nodes and Qwen3-235B-A22B EP 8: their dispatch and combine bytes by hand") {
    // Kimi-K2 (tests/fixtures/constructed/kimi-k2.json): hidden 7,168 as
    // DeepSeek-V3's, so fp8 dispatch 7,392 B and bf16 combine 14,336 B a copy;
    // 60 MoE layers (61, first_k_dense_replace 1). At batch 128 over 16 ranks,
    // 8 a rank: 8 x 8 / 16 x 16 = 64 token-expert pairs a rank, 15/16 of them
    // remote: 60 x 21,728 x 60 layers = 78,220,800 B; the 8 on the other node
    // of 8 GPUs: 32 pairs x 21,728 x 60 = 41,717,760 B over the NIC.
    const ModelSpec kimi = fixture("constructed/kimi-k2.json");
    ScaleOutInputs k;
    k.tp = 1;
    k.dp = 16;
    k.enable_expert_parallel = true;
    k.deepep_dispatch = true;
    const CostModelInputs kin{&kimi, gpu("h200"), WeightFormat{}, std::nullopt, 1, pure(), std::nullopt};
    const CostModel km =
        make_cost_model(kin, ExpertLayoutInputs{plan_scale_out(kimi, k), 1.0, bundled_all_to_all_latencies(), 8, find_nic("ib-ndr")});
    CHECK(km.moe_layers == 60);
    CHECK(km.layout.local_experts == 24);
    CHECK(km.layout.dispatch_bytes_per_copy == 7392);
    CHECK(km.layout.combine_bytes_per_copy == 14336);
    const StepCost ks = decode_step(km, 128, 4096);
    CHECK(ks.rank_expert_tokens == Approx(64));
    CHECK(ks.all_to_all_bytes == Approx(78'220'800));
    CHECK(ks.all_to_all_nic_bytes == Approx(41'717'760));
    // Qwen3-235B-A22B (bf16, hidden 4,096): bf16 dispatch and combine, 8,192 B
    // each a copy; all 94 layers MoE. vLLM --tp 8 --enable-expert-parallel (DeepEP) at
    // batch 64: one attention rank of 8 GPUs, 64 x 8 / 8 = 64 pairs a GPU, 7/8
    // remote over NVLink: 56 x 16,384 x 94 = 86,245,376 B.
    const ModelSpec qwen = fixture("constructed/qwen3-235b-a22b.json");
    ScaleOutInputs q;
    q.tp = 8;
    q.dp = 1;
    q.enable_expert_parallel = true;
    q.deepep_dispatch = true;
    const CostModelInputs qin{&qwen, gpu("h200"), WeightFormat{}, std::nullopt, 8, pure(), std::nullopt};
    const CostModel qm =
        make_cost_model(qin, ExpertLayoutInputs{plan_scale_out(qwen, q), 1.0, bundled_all_to_all_latencies(), 8, find_nic("ib-ndr")});
    CHECK(qm.moe_layers == 94);
    CHECK(qm.layout.local_experts == 16);
    CHECK(qm.layout.dispatch_bytes_per_copy == 8192);
    CHECK(qm.layout.combine_bytes_per_copy == 8192);
    const StepCost qs = decode_step(qm, 64, 4096);
    CHECK(qs.all_to_all_bytes == Approx(86'245'376));
    CHECK(qs.all_to_all_nic_bytes == 0);
}
