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
#include <algorithm>

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

// The attention part of a model's weights, or parts.end().
std::vector<WeightPart>::const_iterator attention_part(const WeightSizing& w) {
    return std::find_if(w.parts.begin(), w.parts.end(), [](const WeightPart& p) { return p.part == ParamPart::Attention; });
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

TEST_CASE("MLA's down-projections are whole on every TP rank, as vLLM, SGLang and TensorRT-LLM load them") {
    const ModelSpec m = preset("deepseek-v3");
    const WeightSizing w = size_weights(m);
    // q_a_proj 1,536 x 7,168 and kv_a_proj_with_mqa (512 + 64) x 7,168, fp8
    // with one fp32 scale per 128 x 128 block: 11,010,048 + 12 x 56 x 4 and
    // 4,128,768 + 5 x 56 x 4 = 15,142,624 B a layer, x 61 = 923,700,064 B.
    const auto attention = attention_part(w);
    REQUIRE(attention != w.parts.end());
    REQUIRE(attention->capped.size() == 1);
    CHECK(attention->capped[0].max_split == 1);
    CHECK(attention->capped[0].bytes == 923'700'064);
    CHECK(attention->capped[0].params == 61 * (1536 + 576) * 7168);
    // Plain TP 8: (673,150,611,808 - 923,700,064) / 8 + 923,700,064 = 84,952,064,032 B a GPU,
    // 808,237,556 B (7/8 of the copies) more than an even split.
    const PipelineStage all = pipeline_stages(61, 1)[0];
    CHECK(stage_weight_bytes(w, m, all, 1, 8) == 84'952'064'032);
    CHECK(stage_weight_bytes(w, m, all, 1, 1) == 673'150'611'808);
    // TP 8 + EP 8: the attention share is 923,700,064 + (11,416,215,392 - 923,700,064) / 8
    // = 923,700,064 + 1,311,564,416 = 2,235,264,480; under DP attention (TP 1) the whole part.
    const StageWeights tp8 = one_stage(m, plan_scale_out(m, vllm_dp(8, 1, true)));
    CHECK(tp8.shares[1].part == ParamPart::Attention);
    CHECK(tp8.shares[1].bytes == 2'235'264'480);
    CHECK(tp8.shares[1].capped_bytes == 923'700'064);
    CHECK(one_stage(m, plan_scale_out(m, vllm_dp(1, 8, true))).shares[1].bytes == 11'416'215'392);
    // DeepSeek-V2-Lite has no q_lora_rank: only kv_a_proj_with_mqa is whole,
    // 576 x 2,048 x 2 B (bf16) x 27 layers = 63,700,992 B; q_proj splits with the heads.
    const ModelSpec lite = fixture("configs/deepseek-v2-lite.json");
    const WeightSizing lw = size_weights(lite);
    const auto la = attention_part(lw);
    REQUIRE(la != lw.parts.end());
    REQUIRE(la->capped.size() == 1);
    CHECK(la->capped[0].bytes == 63'700'992);
}

TEST_CASE("K and V projections split by whole KV heads: past the KV heads each TP rank holds one head") {
    // Qwen2.5-7B: 28 layers, hidden 3,584, 4 KV heads of 128, bf16, with q/k/v
    // biases. k_proj + v_proj + their biases: 2 x (512 x 3,584 + 512) x 2 B =
    // 7,342,080 B a layer, x 28 = 205,578,240 B, split over at most 4 ranks.
    const ModelSpec m = preset("qwen2.5-7b");
    const WeightSizing w = size_weights(m);
    const auto attention = attention_part(w);
    REQUIRE(attention != w.parts.end());
    REQUIRE(attention->capped.size() == 1);
    CHECK(attention->capped[0].max_split == 4);
    CHECK(attention->capped[0].bytes == 205'578'240);
    const PipelineStage all = pipeline_stages(28, 1)[0];
    // TP 4 splits everything evenly: ceil(total / 4).
    CHECK(stage_weight_bytes(w, m, all, 1, 4) == (w.bytes + 3) / 4);
    // TP 8: the rest / 8 and a quarter of K/V on each rank, 205,578,240 / 4 -
    // 205,578,240 / 8 = 25,697,280 B more than an even split (vLLM's
    // num_kv_head_replicas = 2).
    CHECK(stage_weight_bytes(w, m, all, 1, 8) == (w.bytes - 205'578'240 + 7) / 8 + 205'578'240 / 4);
    CHECK(stage_weight_bytes(w, m, all, 1, 8) - (w.bytes + 7) / 8 == 25'697'280);
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
    // - 33,554,432 cuBLAS
    // - 2,046,820,352 the bf16 W_UK_T and W_UV beside the fp8 kv_b_proj (61 layers x all 128 heads x
    //   (128 + 128) x 512 x 2 B at attention TP 1) = 26,095,639,536 B; / (16 x 70,272 = 1,124,352 B a block)
    // = 23,209 blocks = 371,344 tokens on each DP rank, 2,970,752 over 8.
    CHECK(dp8.budget.kv_pool_bytes == 26'095'639'536);
    CHECK(*dp8.num_blocks == 23'209);
    CHECK(*dp8.kv_cache_tokens == 371'344);
    CHECK(*dp8.kv_cache_tokens_total == 2'970'752);
    // 4K: 256 blocks each, 23,209 / 256 = 90 per rank, 720 per replica;
    // 32K: 2,048 blocks, 11 per rank, 88 per replica.
    CHECK(dp8.rows[0].max_requests == 90);
    CHECK(dp8.rows[0].max_requests_replica == 720);
    CHECK(dp8.rows[1].max_requests == 11);
    CHECK(dp8.rows[1].max_requests_total == 88);
    // TP 8 holds 152 at 4K and 19 at 32K (the same command with --tp 8): 5x fewer.
    CHECK(tp8.rows[0].max_requests_replica == 152);
    CHECK(tp8.rows[1].max_requests_replica == 19);
}

TEST_CASE("DeepSeek-V3 on 8 H200 under SGLang with DP attention 8 and EP 8") {
    const ModelSpec m = preset("deepseek-v3");
    const CapacityPlan dp8 = plan(m, Engine::Sglang, 8, sglang_dp(8, 8, 8));
    // Pool: 0.81 x 150,023,207,649 = 121,518,798,195 (mem_fraction_static at tp 8)
    // - 95,942,770,080 weights (81,758,552,064 experts + 14,184,218,016 dense)
    // - 826,781,204 non-torch
    // - 2,046,820,352 w_kc and w_vc, bf16 copies of the fp8 kv_b_proj (61 layers x 32,768 x 512 x 2 B: all
    //   heads at attention TP 1) = 22,702,426,559 B; / 70,272 B a token = 323,065 tokens per DP rank.
    CHECK(dp8.budget.weights_bytes == 95'942'770'080);
    CHECK(dp8.budget.kv_pool_bytes == 22'702'426'559);
    CHECK(*dp8.kv_cache_tokens == 323'065);
    CHECK(*dp8.kv_cache_tokens_total == 2'584'520);
    // 323,065 / 4,096 = 78 per rank (624 in all); / 32,768 = 9 (72).
    CHECK(dp8.rows[0].max_requests == 78);
    CHECK(dp8.rows[0].max_requests_replica == 624);
    CHECK(dp8.rows[1].max_requests == 9);
    CHECK(dp8.rows[1].max_requests_replica == 72);
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

TEST_CASE("TensorRT-LLM's DeepSeek-V3 keeps its token embedding whole at plain TP, where its Llama splits it") {
    // DeepseekV3Model builds Embedding(vocab, hidden, dtype) with no mapping: at TP 8 each GPU holds
    // all 129,280 x 7,168 x 2 = 1,853,358,080 B where an even split holds 231,669,760: 1,621,688,320 B more.
    const ModelSpec m = preset("deepseek-v3");
    CHECK(trtllm_whole_embedding(m));
    const WeightSizing w = size_weights(m);
    const PipelineStage all = pipeline_stages(61, 1)[0];
    CHECK(stage_weight_bytes(w, m, all, 1, 8, true) - stage_weight_bytes(w, m, all, 1, 8) == 1'621'688'320);
    CapacityInputs in;
    in.gpu = gpu("h200");
    in.engine = Engine::Trtllm;
    in.tp = 8;
    in.contexts = {4096};
    // 84,952,064,032 B split as vLLM splits it (tests above), plus the 1,621,688,320.
    CHECK(plan_capacity(m, in).budget.weights_bytes == 86'573'752'352);
    in.engine = Engine::Vllm;
    CHECK(plan_capacity(m, in).budget.weights_bytes == 84'952'064'032);
    // With --ep 8 (no attention DP) the layout keeps it whole too.
    ScaleOutInputs so_in;
    so_in.rules = ScaleOutRules::Trtllm;
    so_in.tp = 8;
    so_in.ep = 8;
    CHECK(plan_scale_out(m, so_in).embedding_tp == 1);
    CHECK(plan_scale_out(m, so_in).head_tp == 8);
    // LlamaModel passes the mapping: split.
    CHECK_FALSE(trtllm_whole_embedding(preset("llama-3.1-70b")));
    so_in.ep = 0;
    CHECK(plan_scale_out(preset("llama-3.1-70b"), so_in).embedding_tp == 8);
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
    // - 511,830,016 k_b_proj_trans (61 layers x (128 heads x 512 x 128 x 1 B
    //   + 128 x 4 x 1 fp32 block scales), the heads whole under attention DP)
    // = 46,585,557,869 B; x free_gpu_memory_fraction 0.9 = 41,927,002,082 B;
    // / (32 x 70,272 = 2,248,704 B a block) = 18,644 blocks = 596,608 tokens
    // on each rank, 4,772,864 over 8.
    CHECK(dep8.budget.weights_bytes == 100'840'747'360);
    CHECK(dep8.budget.kv_pool_bytes == 41'927'002'082);
    CHECK(*dep8.kv_cache_tokens == 596'608);
    CHECK(*dep8.kv_cache_tokens_total == 4'772'864);
    // 4K: 128 blocks each, 18,644 / 128 = 145 per rank (1,160 in all);
    // 32K: 1,024 blocks, 18 per rank (144).
    CHECK(dep8.rows[0].max_requests == 145);
    CHECK(dep8.rows[0].max_requests_replica == 1'160);
    CHECK(dep8.rows[1].max_requests == 18);
    CHECK(dep8.rows[1].max_requests_replica == 144);
}

// Kimi-K2 and Qwen3-235B-A22B in the shapes of their published architectures
// (tests/fixtures/constructed/README.md). Parts as `kvplan size` lists them:
//   Kimi-K2 (fp8, 384 routed experts, 61 layers, 1 dense, MLA, vocab 163,840):
//     embeddings 2,348,810,240  attention 6,169,957,728  mlp 396,458,496
//     experts 1,014,933,749,760  shared_experts 2,643,056,640
//     router 330,393,600  norms 2,013,184  lm_head 2,348,810,240
//   Qwen3-235B-A22B (bf16, 128 experts, 94 layers, 4 KV heads of 128):
//     embeddings 1,244,659,712  attention 13,404,995,584
//     experts 454,192,791,552  router 98,566,144  norms 1,596,416
//     lm_head 1,244,659,712

TEST_CASE("the constructed Kimi-K2 and Qwen3-235B-A22B have their published parameter totals") {
    // Moonshot's model card: 1T total, 32B activated; Qwen3's: 235B total, 22B activated.
    const ModelSpec kimi = fixture("constructed/kimi-k2.json");
    const ModelSpec qwen = fixture("constructed/qwen3-235b-a22b.json");
    // By hand for Kimi-K2: experts 60 MoE layers x 384 x 3 x 7,168 x 2,048 =
    // 1,014,686,023,680; the rest (attention, 1 dense MLP, shared experts,
    // router, embeddings, head, norms) 11,722,208,768: 1,026,408,232,448,
    // "1T"; active: 60 x 8 x 44,040,192 of the experts + the rest = 32,861,500,928, "32B".
    CHECK(size_weights(kimi).params == 1'026'408'232'448);
    CHECK(size_weights(kimi).active_params == 32'861'500'928);
    // Qwen3: 94 x 128 x 3 x 4,096 x 1,536 = 227,096,395,776 of experts, 235.09B in all, 22.19B active.
    CHECK(size_weights(qwen).params == 235'093'634'560);
    CHECK(size_weights(qwen).active_params == 22'190'763'520);
}

TEST_CASE("Kimi-K2 fp8 leaves no KV pool on 8 H200s under vLLM, and 696,464 tokens a rank on 16 with DP 16 + EP 16") {
    const ModelSpec m = fixture("constructed/kimi-k2.json");
    // DP 8 + EP 8: 48 of 384 experts, 1,014,933,749,760 x 48 / 384 = 126,866,718,720 B,
    // and every other part whole: 2,348,810,240 x 2 + 6,169,957,728 + 396,458,496
    // + 2,643,056,640 + 330,393,600 + 2,013,184 = 14,239,500,128 B; 141,106,218,848 B
    // in all, more than the 135,020,886,884 B vLLM takes (0.9 x 150,023,207,649).
    const CapacityPlan dp8 = plan(m, Engine::Vllm, 1, vllm_dp(1, 8, true));
    CHECK(dp8.budget.weights_bytes == 141'106'218'848);
    CHECK(dp8.budget.kv_pool_bytes < 0);
    CHECK(dp8.rows[0].max_requests == 0);
    // TP 8 holds 1,029,173,249,888 / 8 of it, but the overhead leaves no pool either:
    // Moonshot's deployment guide makes 16 GPUs the smallest unit for its FP8 weights.
    CHECK(plan(m, Engine::Vllm, 8, std::nullopt).budget.kv_pool_bytes < 0);
    // DP 16 + EP 16: 24 experts a GPU, 63,433,359,360 B + 14,239,500,128 = 77,672,859,488 B.
    // Pool: 135,020,886,884 - 77,672,859,488 - 826,781,204 non-torch
    // - 1,258,291,200 activations (8,192 x (3 x 18,432 + 3 x 7,168) x 2 B)
    // - 5,263,851,520 sampler (1,024 x 163,840 x 38 + 146,800,640 - 1,258,291,200)
    // - 33,554,432 cuBLAS
    // - 1,023,410,176 bf16 W_UK_T and W_UV (61 x 64 heads x 256 x 512 x 2 B)
    // = 48,942,138,864 B; / 1,124,352 B a block (16 x 70,272) = 43,529 blocks = 696,464 tokens a rank.
    const CapacityPlan dp16 = plan(m, Engine::Vllm, 1, vllm_dp(1, 16, true));
    CHECK(dp16.kv_bytes_per_token_per_gpu == 70'272);
    CHECK(dp16.budget.weights_bytes == 77'672'859'488);
    CHECK(dp16.budget.kv_pool_bytes == 48'942'138'864);
    CHECK(*dp16.num_blocks == 43'529);
    CHECK(*dp16.kv_cache_tokens == 696'464);
    // 4K: 43,529 / 256 = 170 a rank, 2,720 on 16; 32K: / 2,048 = 21, 336.
    CHECK(dp16.rows[0].max_requests == 170);
    CHECK(dp16.rows[0].max_requests_replica == 2'720);
    CHECK(dp16.rows[1].max_requests == 21);
    CHECK(dp16.rows[1].max_requests_replica == 336);
}

TEST_CASE("Qwen3-235B-A22B on 8 H200s with EP 8 under vLLM: whole experts, attention and its 4 KV heads over TP 8") {
    const ModelSpec m = fixture("constructed/qwen3-235b-a22b.json");
    // vLLM --tensor-parallel-size 8 --enable-expert-parallel: 16 of 128 experts,
    // 454,192,791,552 / 8 = 56,774,098,944 B; attention / 8 but K and V, whose
    // 4 KV heads give each GPU one whole head (94 x 2 x 512 x 4,096 x 2 B =
    // 788,529,152 B, / 4): (13,404,995,584 - 788,529,152) / 8 + 197,132,288 =
    // 1,774,190,592; embeddings and head / 8: 155,582,464 x 2; router
    // 98,566,144 and norms 1,596,416 whole: 58,959,617,024 B.
    ScaleOutInputs in = vllm_dp(8, 1, true);
    const CapacityPlan ep8 = plan(m, Engine::Vllm, 8, in);
    REQUIRE(ep8.scale_out);
    CHECK(ep8.scale_out->ep == 8);
    CHECK(ep8.scale_out->experts_per_gpu == 16);
    CHECK(ep8.budget.weights_bytes == 58'959'617'024);
    // 4 KV heads over TP 8: each GPU holds one, as vLLM replicates them:
    // 94 x 1 x 128 x 2 (K, V) x 2 B = 48,128 B a token.
    CHECK(ep8.kv_bytes_per_token_per_gpu == 48'128);
    // Pool: 135,020,886,884 - 58,959,617,024 - 826,781,204 non-torch
    // - 276,824,064 activations (8,192 x (3 x 12,288 / 8 + 3 x 4,096) x 2 B)
    // - 5,719,195,648 sampler - 33,554,432 cuBLAS = 69,204,914,512 B;
    // / 770,048 B a block = 89,870 blocks = 1,437,920 tokens;
    // 4K: / 256 = 351 requests, 32K: / 2,048 = 43.
    CHECK(ep8.budget.kv_pool_bytes == 69'204'914'512);
    CHECK(*ep8.kv_cache_tokens == 1'437'920);
    CHECK(ep8.rows[0].max_requests == 351);
    CHECK(ep8.rows[1].max_requests == 43);
    // Plain TP 8 shards the router too (7/8 of 98,566,144 + 1,596,416 = 87,642,240 B less).
    CHECK(plan(m, Engine::Vllm, 8, std::nullopt).budget.weights_bytes == 58'959'617'024 - 87'642'240);
}
