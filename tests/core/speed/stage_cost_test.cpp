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
