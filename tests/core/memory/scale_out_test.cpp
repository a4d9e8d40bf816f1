// Data-parallel attention and expert parallelism (core/memory/parallel.cpp
// plan_scale_out, stage_weights_scaled, and plan_capacity with scale_out).
// Each weight figure is derived in its comment from the preset's parts as
// `kvplan size --model X` lists them (models/presets/*.json, from the
// Hugging Face configs in the reference folder):
//   DeepSeek-V3 (fp8 checkpoint, 256 routed experts, 61 layers, 3 dense):
//     embeddings 1,853,358,080  attention 11,416,215,392  mlp 1,189,375,488
//     experts 654,068,416,512  shared_experts 2,554,954,752  router 212,920,320
//     norms 2,013,184  lm_head 1,853,358,080  (total 673,150,611,808)
//   gpt-oss-120b (mxfp4 experts, 128 experts): embeddings 1,158,266,880
//     attention 1,911,610,368  experts 60,993,699,840  router 26,551,296
//     norms 420,480  lm_head 1,158,266,880
//   Mixtral-8x7B (bf16, 8 experts): embeddings 262,144,000  attention
//     2,684,354,560  experts 90,194,313,216  router 2,097,152  norms 532,480
//     lm_head 262,144,000
#include <catch2/catch.hpp>

#include "core/memory/capacity.hpp"
#include "core/memory/parallel.hpp"
#include "core/model/weights.hpp"
#include "io/gpu_db.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

ScaleOutInputs vllm_dp(std::int64_t tp, std::int64_t dp, bool ep) {
    ScaleOutInputs s;
    s.rules = ScaleOutRules::Vllm;
    s.tp = tp;
    s.dp = dp;
    s.enable_expert_parallel = ep;
    return s;
}

ScaleOutInputs sglang_dp(std::int64_t tp, std::int64_t dp, std::int64_t ep) {
    ScaleOutInputs s;
    s.rules = ScaleOutRules::Sglang;
    s.tp = tp;
    s.dp = dp;
    s.ep = ep;
    return s;
}

StageWeights one_stage(const ModelSpec& m, const ScaleOut& so) {
    const WeightSizing w = size_weights(m);
    return stage_weights_scaled(w, m, pipeline_stages(static_cast<std::int64_t>(m.layers.size()), 1)[0], 1, so);
}

CapacityPlan plan(const ModelSpec& m, Engine e, std::int64_t tp, std::optional<ScaleOutInputs> so) {
    CapacityInputs in;
    in.gpu = gpu("h200");
    in.engine = e;
    in.tp = tp;
    in.contexts = {4096, 32768};
    in.scale_out = so;
    return plan_capacity(m, in);
}

}  // namespace

TEST_CASE("vLLM data-parallel 8 with expert parallelism puts 32 of DeepSeek-V3's 256 experts on each GPU") {
    const ModelSpec m = preset("deepseek-v3");
    const ScaleOut so = plan_scale_out(m, vllm_dp(1, 8, true));
    // FusedMoEParallelConfig.make: ep_size = dp x tp = 8, expert tp 1; 256 / 8 = 32.
    CHECK(so.gpus == 8);
    CHECK(so.attention_tp == 1);
    CHECK(so.ep == 8);
    CHECK(so.expert_tp == 1);
    CHECK(so.experts_per_gpu == 32);
    const StageWeights w = one_stage(m, so);
    // experts: 654,068,416,512 x 32 / 256 = 81,758,552,064
    CHECK(w.expert_bytes == 81'758'552'064);
    // dense, every part whole at TP 1: 11,416,215,392 + 1,189,375,488 + 2,554,954,752
    // + 1,853,358,080 x 2 + 212,920,320 + 2,013,184 = 19,082,195,296
    CHECK(w.dense_bytes == 19'082'195'296);
    CHECK(w.total_bytes == 100'840'747'360);
}

TEST_CASE("vLLM data-parallel without expert parallelism shards each expert over TP x DP") {
    const ModelSpec m = preset("mixtral-8x7b");
    const ScaleOut so = plan_scale_out(m, vllm_dp(2, 2, false));
    // flatten_tp_across_dp: the MoE layer's tp_size = 2 x 2 = 4, ep 1.
    CHECK(so.ep == 1);
    CHECK(so.expert_tp == 4);
    // experts: 90,194,313,216 / 4 = 22,548,578,304
    CHECK(one_stage(m, so).expert_bytes == 22'548'578'304);
}

TEST_CASE("SGLang DP attention 8 with EP 8 keeps the dense MLP and the LM head on the full TP") {
    const ModelSpec m = preset("deepseek-v3");
    const ScaleOut so = plan_scale_out(m, sglang_dp(8, 8, 8));
    // attn_tp_size = tp / dp = 1; moe_tp_size = tp / ep = 1.
    CHECK(so.gpus == 8);
    CHECK(so.attention_tp == 1);
    CHECK(so.ep == 8);
    CHECK(so.expert_tp == 1);
    CHECK(so.dense_mlp_tp == 8);
    CHECK(so.embedding_tp == 1);
    CHECK(so.head_tp == 8);
    const StageWeights w = one_stage(m, so);
    CHECK(w.expert_bytes == 81'758'552'064);
    // attention 11,416,215,392 whole + mlp 1,189,375,488 / 8 = 148,671,936
    // + shared 2,554,954,752 / 8 = 319,369,344 + embeddings 1,853,358,080 whole
    // + lm_head 1,853,358,080 / 8 = 231,669,760 + router 212,920,320 + norms 2,013,184
    // = 14,184,218,016
    CHECK(w.dense_bytes == 14'184'218'016);
}

TEST_CASE("SGLang deepep replicates the shared experts and moe-dense-tp-size 1 the dense MLP") {
    const ModelSpec m = preset("deepseek-v3");
    ScaleOutInputs in = sglang_dp(8, 8, 0);
    in.deepep = true;  // sets ep = tp = 8
    ScaleOut so = plan_scale_out(m, in);
    CHECK(so.ep == 8);
    CHECK(so.shared_experts_tp == 1);
    // 14,184,218,016 - 319,369,344 + 2,554,954,752 = 16,419,803,424
    CHECK(one_stage(m, so).dense_bytes == 16'419'803'424);
    in.moe_dense_tp = 1;
    so = plan_scale_out(m, in);
    // the dense MLP whole: 16,419,803,424 + (1,189,375,488 - 148,671,936) = 17,460,506,976
    CHECK(one_stage(m, so).dense_bytes == 17'460'506'976);
}

TEST_CASE("redundant experts add physical experts per GPU") {
    const ModelSpec m = preset("deepseek-v3");
    ScaleOutInputs in = vllm_dp(1, 8, true);
    in.redundant_experts = 32;
    const ScaleOut so = plan_scale_out(m, in);
    // (256 + 32) / 8 = 36 experts per GPU: 654,068,416,512 x 288 / (256 x 8) = 91,978,371,072
    CHECK(so.experts_per_gpu == 36);
    CHECK(one_stage(m, so).expert_bytes == 91'978'371'072);
}

TEST_CASE("gpt-oss-120b and Mixtral with EP 8 hold whole experts, attention still split by TP 8") {
    // vLLM --tp 8 --enable-expert-parallel (dp 1): ep 8, attention TP 8.
    const ModelSpec g = preset("gpt-oss-120b");
    StageWeights w = one_stage(g, plan_scale_out(g, vllm_dp(8, 1, true)));
    // experts 60,993,699,840 / 8 = 7,624,212,480 (16 of 128 experts)
    CHECK(w.expert_bytes == 7'624'212'480);
    // ceil(1,158,266,880 / 8) x 2 + 1,911,610,368 / 8 + 26,551,296 + 420,480
    // = 144,783,360 x 2 + 238,951,296 + 26,971,776 = 555,489,792
    CHECK(w.dense_bytes == 555'489'792);
    const ModelSpec x = preset("mixtral-8x7b");
    w = one_stage(x, plan_scale_out(x, vllm_dp(8, 1, true)));
    // one of 8 experts per GPU: 90,194,313,216 / 8 = 11,274,289,152
    CHECK(w.expert_bytes == 11'274'289'152);
    // 262,144,000 / 8 x 2 + 2,684,354,560 / 8 + 2,097,152 + 532,480 = 403,709,952;
    // plain TP 8 splits the router and norms too: ceil(93,405,585,408 / 8) = 11,675,698,176
    CHECK(w.dense_bytes == 403'709'952);
    CHECK(w.total_bytes == 11'677'999'104);
    // Against plain TP 8, which splits every part (router and norms too) by 8:
    const PipelineStage whole = pipeline_stages(32, 1)[0];
    CHECK(stage_weight_bytes(size_weights(x), x, whole, 1, 8) == 11'675'698'176);
}

TEST_CASE("DeepSeek-V3 on 8 H200 under vLLM holds several times more requests with DP 8 and EP 8 than with TP 8") {
    const ModelSpec m = preset("deepseek-v3");
    const CapacityPlan tp8 = plan(m, Engine::Vllm, 8, std::nullopt);
    const CapacityPlan dp8 = plan(m, Engine::Vllm, 1, vllm_dp(1, 8, true));
    // The MLA latent is whole on every rank: 61 x 576 x 2 B = 70,272 B per token either way.
    CHECK(tp8.kv_bytes_per_token_per_gpu == 70'272);
    CHECK(dp8.kv_bytes_per_token_per_gpu == 70'272);
    CHECK(dp8.gpus == 8);
    CHECK(dp8.budget.weights_bytes == 100'840'747'360);
    // Pool per GPU: 135,020,886,884 (0.9 x 150,023,207,649) - 100,840,747,360 weights
    // - 826,781,204 non-torch (0.35 + 0.42 GiB: NCCL for the 8-GPU DP/EP group)
    // - 1,258,291,200 activations (8,192 tokens x (3 x 18,432 + 3 x 7,168) x 2 B at attention TP 1)
    // - 3,919,052,800 sampler (1,024 x 129,280 x 38 + 146,800,640 - 1,258,291,200)
    // - 33,554,432 cuBLAS = 28,142,459,888 B; / (16 x 70,272 = 1,124,352 B a block)
    // = 25,029 blocks = 400,464 tokens on each DP rank, 3,203,712 over 8.
    CHECK(dp8.budget.kv_pool_bytes == 28'142'459'888);
    CHECK(*dp8.num_blocks == 25'029);
    CHECK(*dp8.kv_cache_tokens == 400'464);
    CHECK(*dp8.kv_cache_tokens_total == 3'203'712);
    // 4K: 256 blocks each, 25,029 / 256 = 97 per rank, 776 per replica;
    // 32K: 2,048 blocks, 12 per rank, 96 per replica.
    CHECK(dp8.rows[0].max_requests == 97);
    CHECK(dp8.rows[0].max_requests_replica == 776);
    CHECK(dp8.rows[1].max_requests == 12);
    CHECK(dp8.rows[1].max_requests_total == 96);
    // TP 8 holds 155 at 4K and 19 at 32K (the same command with --tp 8): 5x fewer.
    CHECK(tp8.rows[0].max_requests_replica == 155);
    CHECK(tp8.rows[1].max_requests_replica == 19);
}

TEST_CASE("DeepSeek-V3 on 8 H200 under SGLang with DP attention 8 and EP 8") {
    const ModelSpec m = preset("deepseek-v3");
    const CapacityPlan dp8 = plan(m, Engine::Sglang, 8, sglang_dp(8, 8, 8));
    // Pool: 0.81 x 150,023,207,649 = 121,518,798,195 (mem_fraction_static at tp 8)
    // - 95,942,770,080 weights (81,758,552,064 experts + 14,184,218,016 dense)
    // - 826,781,204 non-torch = 24,749,246,911 B; / 70,272 B a token = 352,192 tokens per DP rank.
    CHECK(dp8.budget.weights_bytes == 95'942'770'080);
    CHECK(dp8.budget.kv_pool_bytes == 24'749'246'911);
    CHECK(*dp8.kv_cache_tokens == 352'192);
    CHECK(*dp8.kv_cache_tokens_total == 2'817'536);
    // 352,192 / 4,096 = 85 per rank (680 in all); / 32,768 = 10 (80).
    CHECK(dp8.rows[0].max_requests == 85);
    CHECK(dp8.rows[0].max_requests_replica == 680);
    CHECK(dp8.rows[1].max_requests == 10);
    CHECK(dp8.rows[1].max_requests_replica == 80);
}

TEST_CASE("TensorRT-LLM's attention DP (DEP 8) replicates every weight but the routed experts") {
    const ModelSpec m = preset("deepseek-v3");
    ScaleOutInputs in;
    in.rules = ScaleOutRules::Trtllm;
    in.tp = 8;  // tensor_parallel_size 8, enable_attention_dp, moe_expert_parallel_size 8
    in.dp = 8;
    in.ep = 8;
    const ScaleOut so = plan_scale_out(m, in);
    CHECK(so.gpus == 8);
    CHECK(so.attention_tp == 1);
    CHECK(so.expert_tp == 1);
    CHECK(so.experts_per_gpu == 32);
    CHECK(so.dense_mlp_tp == 1);
    CHECK(so.shared_experts_tp == 1);
    CHECK(so.embedding_tp == 1);
    CHECK(so.head_tp == 1);
    // 654,068,416,512 x 32 / 256 = 81,758,552,064 B of experts; the rest whole:
    // 1,853,358,080 x 2 + 11,416,215,392 + 1,189,375,488 + 2,554,954,752
    // + 212,920,320 + 2,013,184 = 19,082,195,296 B (as vLLM's DP 8 + EP 8).
    const StageWeights w = one_stage(m, so);
    CHECK(w.expert_bytes == 81'758'552'064);
    CHECK(w.dense_bytes == 19'082'195'296);
    // EP 4 of TP 8: each expert over moe_tensor_parallel_size 2, 64 a GPU.
    in.ep = 4;
    const ScaleOut ep4 = plan_scale_out(m, in);
    CHECK(ep4.experts_per_gpu == 64);
    CHECK(ep4.expert_tp == 2);
    CHECK(one_stage(m, ep4).expert_bytes == 81'758'552'064);
    // Attention DP is every GPU or none; EP must divide TP; vLLM's and SGLang's flags are refused.
    in.ep = 8;
    in.dp = 4;
    CHECK_THROWS_WITH(plan_scale_out(m, in), Catch::Contains("pass --dp 8"));
    in.dp = 8;
    in.ep = 3;
    CHECK_THROWS_WITH(plan_scale_out(m, in), Catch::Contains("does not divide --tp 8"));
    in.ep = 8;
    in.enable_expert_parallel = true;
    CHECK_THROWS_WITH(plan_scale_out(m, in), Catch::Contains("moe_expert_parallel_size"));
}

TEST_CASE("DeepSeek-V3 on 8 H200 under TensorRT-LLM with attention DP 8 and EP 8") {
    const ModelSpec m = preset("deepseek-v3");
    ScaleOutInputs in;
    in.rules = ScaleOutRules::Trtllm;
    in.tp = 8;
    in.dp = 8;
    in.ep = 8;
    const CapacityPlan dep8 = plan(m, Engine::Trtllm, 8, in);
    // Free after loading: 150,023,207,649 - 100,840,747,360 weights
    // - 826,781,204 non-torch (0.35 + 0.42 GiB: NCCL for the 8-GPU group)
    // - 1,258,291,200 activations (8,192 tokens x (3 x 18,432 + 3 x 7,168) x 2 B)
    // = 47,097,387,885 B; x free_gpu_memory_fraction 0.9 = 42,387,649,096 B;
    // / (32 x 70,272 = 2,248,704 B a block) = 18,849 blocks = 603,168 tokens
    // on each rank, 4,825,344 over 8.
    CHECK(dep8.budget.weights_bytes == 100'840'747'360);
    CHECK(dep8.budget.kv_pool_bytes == 42'387'649'096);
    CHECK(*dep8.kv_cache_tokens == 603'168);
    CHECK(*dep8.kv_cache_tokens_total == 4'825'344);
    // 4K: 128 blocks each, 18,849 / 128 = 147 per rank (1,176 in all);
    // 32K: 1,024 blocks, 18 per rank (144).
    CHECK(dep8.rows[0].max_requests == 147);
    CHECK(dep8.rows[0].max_requests_replica == 1'176);
    CHECK(dep8.rows[1].max_requests == 18);
    CHECK(dep8.rows[1].max_requests_replica == 144);
}
