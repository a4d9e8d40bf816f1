// Pipeline stages' cost models (make_stage_cost_model) against the whole
// model's: what the stages hold adds up to the model, and the extra terms
// are the ones derived by hand.
#include <catch2/catch.hpp>

#include "core/memory/parallel.hpp"
#include "core/speed/step_cost.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

TEST_CASE("two pipeline stages of Llama-3.1-8B add up to the whole model, plus the send between them") {
    // 32 layers: 16 a stage (get_pp_indices). hidden 4,096: stage 0 sends
    // the hidden state and the residual, 2 x 4,096 x 2 B = 16,384 B a token.
    const ModelSpec m = preset("llama-3.1-8b");
    CostModelInputs in;
    in.model = &m;
    in.gpu = gpu("h100-sxm");
    in.tp = 2;
    const CostModel whole = make_cost_model(in);
    const std::vector<PipelineStage> stages = pipeline_stages(32, 2);
    REQUIRE(stages[0].layers == 16);
    const CostModel s0 = make_stage_cost_model(in, stages[0], 2);
    const CostModel s1 = make_stage_cost_model(in, stages[1], 2);
    CHECK(s0.dense_weight_bytes + s1.dense_weight_bytes == Approx(whole.dense_weight_bytes).epsilon(1e-12));
    CHECK(s1.dense_weight_bytes > s0.dense_weight_bytes);  // the LM head, 128,256 x 4,096 x 2 B / 2 ranks
    CHECK(s1.dense_weight_bytes - s0.dense_weight_bytes == Approx(128256.0 * 4096 * 2 / 2).epsilon(1e-9));
    CHECK(s0.matmul_flops_per_token + s1.matmul_flops_per_token == Approx(whole.matmul_flops_per_token).epsilon(1e-9));
    REQUIRE(s0.groups.size() == whole.groups.size());
    CHECK(s0.groups[0].kv_bytes_per_token + s1.groups[0].kv_bytes_per_token == whole.groups[0].kv_bytes_per_token);
    CHECK(s0.allreduces_per_step == 32);  // 2 per layer of its 16
    CHECK(s1.allreduces_per_step == 32);
    CHECK(s0.send_bytes_per_token == 16384);
    CHECK(s1.send_bytes_per_token == 0);
    CHECK(s0.step_overhead_s == whole.step_overhead_s);
    CHECK(s1.step_overhead_s == 0);

    // A decode of 8 sequences at 1,000 tokens is memory-bound on every
    // part, so the stages' times add up to the whole step's plus the send
    // (8 x 16,384 B over the link) and the all-reduces (the same count in
    // all, 64, split 32 and 32).
    const std::vector<SeqWork> batch(8, SeqWork{1000, 1});
    const StepCost a = mixed_step(s0, batch), b = mixed_step(s1, batch), w = mixed_step(whole, batch);
    REQUIRE_FALSE(a.compute_bound);
    REQUIRE_FALSE(b.compute_bound);
    REQUIRE_FALSE(w.compute_bound);
    const double send = 8.0 * 16384 / static_cast<double>(in.gpu.interconnect_bytes_per_s);
    CHECK(a.send_s == Approx(send).epsilon(1e-12));
    CHECK(b.send_s == 0);
    CHECK(a.total_s + b.total_s == Approx(w.total_s + send).epsilon(1e-9));
}

TEST_CASE("a DeepSeek-V3 stage prices its own layers: the dense ones on stage 0, more MoE layers on stage 2") {
    // PP 4 over 61 layers: 15, 15, 16, 15 (get_pp_indices). Layers 0-2 are
    // dense (first_k_dense_replace 3), so stage 0 has 12 MoE layers, stage 2
    // 16. By hand, a rank's dense bytes at TP 8 (capacity_test's figures,
    // the final norm spread over the layers aside): stage 0's split layer
    // tensors are 3 x 568,499,712 + 12 x 172,041,216 (attention and norms)
    // + 12 x 47,721,984 (shared expert, router and its bias) B over 8 plus
    // 15 x 15,142,624 B whole; stage 2's 16 x (172,041,216 + 50,468,864) B
    // over 8 plus 16 x 15,142,624 B.
    const ModelSpec m = preset("deepseek-v3");
    CostModelInputs in;
    in.model = &m;
    in.gpu = gpu("h200");
    in.tp = 8;
    const CostModel whole = make_cost_model(in);
    const std::vector<PipelineStage> stages = pipeline_stages(61, 4);
    const CostModel s0 = make_stage_cost_model(in, stages[0], 4);
    const CostModel s2 = make_stage_cost_model(in, stages[2], 4);
    CHECK(whole.moe_layers == 58);
    CHECK(s0.moe_layers == 12);
    CHECK(s2.moe_layers == 16);
    // One expert of one layer on one rank is the same everywhere.
    CHECK(s0.expert_bytes == Approx(whole.expert_bytes).epsilon(1e-12));
    CHECK(s0.expert_bytes == Approx(44'050'944.0 / 8).epsilon(1e-12));
    const double norm = 14'336.0 / 61;  // the final norm, in no layer, per layer (rounded up per stage: < 1 B)
    CHECK(s0.dense_weight_bytes ==
          Approx((3 * 568'499'712.0 + 12 * (172'041'216.0 + 47'721'984.0) + 15 * norm) / 8 + 15 * 15'142'624.0).epsilon(1e-9));
    CHECK(s2.dense_weight_bytes == Approx((16 * (172'041'216.0 + 47'721'984.0) + 16 * norm) / 8 + 16 * 15'142'624.0).epsilon(1e-9));
    // The four stages' matmul FLOPs add up to the whole model's.
    double flops = 0;
    for (const PipelineStage& st : stages) flops += make_stage_cost_model(in, st, 4).matmul_flops_per_token;
    CHECK(flops == Approx(whole.matmul_flops_per_token).epsilon(1e-6));
}
