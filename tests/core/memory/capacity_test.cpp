// plan_capacity: the seeds' capacity tables, published vLLM figures, and
// hand-derived cases for paging, contiguous allocation, shared prefixes,
// tensor/pipeline parallelism and vLLM's hybrid layouts. Each expected number
// is published (source quoted) or derived in the comment next to it.
#include "core/memory/capacity.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/byte_size.hpp"
#include "core/memory/parallel.hpp"
#include "io/gpu_db.hpp"
#include "io/presets.hpp"
#include "report/engine_log.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

constexpr double kGiB = 1073741824.0;

// The seeds' "32-layer 4096-hidden" MHA model (Llama-2-7B's shape): 524,288 B/token in bf16.
ModelSpec seven_b() {
    ManualShape s;
    s.layers = 32;
    s.kv_heads = 32;
    s.head_dim = 128;
    s.params = 7'000'000'000;
    return manual_model(s);
}

ModelSpec shape(std::int64_t layers, std::int64_t kv_heads, std::int64_t head_dim) {
    ManualShape s;
    s.layers = layers;
    s.kv_heads = kv_heads;
    s.head_dim = head_dim;
    s.heads = std::max<std::int64_t>(32, kv_heads);  // a real 32-head query side, or MHA
    s.hidden = s.heads * head_dim;
    return manual_model(s);
}

CapacityInputs on_memory(std::int64_t bytes, double util, std::int64_t weights, std::int64_t overhead, std::vector<std::int64_t> contexts) {
    CapacityInputs in;
    in.gpu = gpu_from_memory(bytes, "test GPU");
    in.mem_util = util;
    in.weights_bytes = weights;
    in.overhead_bytes = overhead;
    in.contexts = std::move(contexts);
    return in;
}

std::vector<std::int64_t> requests(const CapacityPlan& p) {
    std::vector<std::int64_t> out;
    for (const ContextRow& r : p.rows) out.push_back(r.max_requests);
    return out;
}

}  // namespace

TEST_CASE("seed 000: 40 GB usable, 14 GB weights, 2 GB runtime -> 22 / 5 / 91 requests at 2,000 / 8,000 / 500 tokens") {
    // Seed 000 step 4: 24.0 GB for KV / (tokens x 524,288 B) = 22.9, 5.7, 91.6 with tokens packed exactly
    // (block size 1).
    CapacityInputs in = on_memory(40'000'000'000, 1.0, 14'000'000'000, 2'000'000'000, {2000, 8000, 500});
    in.block_size = 1;
    CapacityPlan p = plan_capacity(seven_b(), in);
    CHECK(p.budget.kv_pool_bytes == 24'000'000'000);
    CHECK(requests(p) == std::vector<std::int64_t>{22, 5, 91});

    // vLLM's 16-token blocks: a 500-token request holds ceil(500 / 16) = 32 blocks (512 tokens), so
    // 24e9 / (512 x 524,288) = 89.4 -> 89; 2,000 and 8,000 are whole blocks and unchanged.
    in.block_size = 16;
    CHECK(requests(plan_capacity(seven_b(), in)) == std::vector<std::int64_t>{22, 5, 89});
}

TEST_CASE("quadrupling the context quarters the concurrency") {
    CapacityPlan p = plan_capacity(seven_b(), on_memory(80'000'000'000, 1.0, 14'000'000'000, 2'000'000'000, {1024, 4096}));
    // 64e9 / (1024 x 524,288) = 119.2 -> 119; / 4 -> 29.8 -> 29.
    CHECK(requests(p) == std::vector<std::int64_t>{119, 29});
}

TEST_CASE("seed 002: a 13B model, 26 GB of bf16 weights on an 80 GB device, holds about 17 users of 4K") {
    // 40 layers x 40 heads x 128: 819,200 B/token, 3.125 GiB per 4,096 tokens. The seed's "80 GB" device is
    // 80 GiB (85.9e9 B): (85.9e9 - 26e9) / 3.355e9 = 17.85 -> 17.
    CapacityPlan p = plan_capacity(shape(40, 40, 128), on_memory(gib(80), 1.0, 26'000'000'000, 0, {4096}));
    CHECK(p.kv_bytes_per_token_per_gpu == 819'200);
    CHECK(requests(p) == std::vector<std::int64_t>{17});
}

TEST_CASE("seed 001: 80 GiB x 0.9 - 16 GB weights - 4 GiB -> 27 MHA chats of 4,000 tokens, x4 with GQA, x8 with GQA and fp8") {
    // free = 72 GiB - 14.90 GiB - 4 GiB = 53.10 GiB; per chat 4,000 x 512 KiB = 1.953 GiB -> 27.19 -> 27;
    // GQA (8 KV heads): 0.488 GiB -> 108; fp8: 0.244 GiB -> 217 (the seed's "x4" and "x8", rounded down).
    CapacityInputs in = on_memory(gib(80), 0.9, 16'000'000'000, gib(4), {4000});
    CHECK(requests(plan_capacity(shape(32, 32, 128), in)) == std::vector<std::int64_t>{27});
    CHECK(requests(plan_capacity(shape(32, 8, 128), in)) == std::vector<std::int64_t>{108});
    in.kv_dtype = Dtype::Fp8;
    CHECK(requests(plan_capacity(shape(32, 8, 128), in)) == std::vector<std::int64_t>{217});
}

TEST_CASE("the paged pool: floor(pool / (block x bytes per token)) x block tokens") {
    // 24e9 / (16 x 524,288) = 2861.02 -> 2,861 blocks, 45,776 tokens.
    CapacityPlan p = plan_capacity(seven_b(), on_memory(40'000'000'000, 1.0, 14'000'000'000, 2'000'000'000, {2000}));
    CHECK(p.num_blocks == 2861);
    CHECK(p.kv_cache_tokens == 45'776);
}

TEST_CASE("contiguous allocation reserves max tokens per request: 4,000 reserved for 200 used is 20x") {
    // Seed 000 step 6: "A request that could produce 4,000 tokens but stops at 200 has reserved 20x the memory it used."
    CapacityInputs in = on_memory(40'000'000'000, 1.0, 14'000'000'000, 2'000'000'000, {200});
    in.allocation = Allocation::Contiguous;
    in.max_tokens = 4000;
    CapacityPlan p = plan_capacity(seven_b(), in);
    const ContextRow& row = p.rows.at(0);
    CHECK(row.reserved_bytes_per_request == 4000LL * 524'288);
    CHECK(row.used_bytes_per_request == 200LL * 524'288);
    CHECK(row.reserved_bytes_per_request / row.used_bytes_per_request == 20);
    // 24e9 / (4,000 x 524,288) = 11.4 -> 11 requests, each leaving 3,800 tokens empty.
    CHECK(row.max_requests == 11);
    CHECK(row.unused_bytes == 11LL * 3800 * 524'288);
    // Paged, the same 200-token requests: 24e9 / (13 blocks x 16 x 524,288) = 220.1 -> 220.
    in.allocation = Allocation::Paged;
    in.max_tokens.reset();
    CHECK(plan_capacity(seven_b(), in).rows.at(0).max_requests == 220);
}

TEST_CASE("a shared prefix is stored once") {
    // Pool 24e9 B; 2,000-token requests whose first 1,000 tokens are shared: the prefix costs 1,000 x 524,288
    // once, each request 1,000 x 524,288 more: (24e9 - 5.24288e8) / 5.24288e8 = 44.8 -> 44 (vs 22 unshared).
    CapacityInputs in = on_memory(40'000'000'000, 1.0, 14'000'000'000, 2'000'000'000, {2000});
    in.block_size = 1;
    in.prefix_tokens = 1000;
    CapacityPlan p = plan_capacity(seven_b(), in);
    CHECK(p.rows.at(0).max_requests == 22);
    CHECK(p.rows.at(0).max_requests_with_prefix == 44);
}

TEST_CASE("vLLM #12330: Llama-3-8B on an A100-40GB, 11.12 GiB of KV is 5,691 blocks and 11.12x at 8,192 tokens") {
    // V0 log: "the rest ... for KV Cache is 11.12GiB", "# GPU blocks: 5691", "Maximum concurrency for 8192 tokens
    // per request: 11.12x". 11.12 GiB is [11.115, 11.125) GiB: [5,690.9, 5,696.0) blocks of 2 MiB.
    CapacityInputs in;
    in.gpu = gpu("a100-sxm-40gb");
    in.engine = Engine::VllmV0;
    in.max_model_len = 8192;
    in.contexts = {8192};
    in.kv_pool_bytes = gib(11.115);
    const std::int64_t lo = *plan_capacity(preset("llama-3.1-8b"), in).num_blocks;
    in.kv_pool_bytes = gib(11.125);
    const std::int64_t hi = *plan_capacity(preset("llama-3.1-8b"), in).num_blocks;
    CHECK(lo <= 5691);
    CHECK(5691 <= hi);
    // The concurrency line for exactly 5,691 blocks: 5,691 x 16 / 8,192 = 11.115 -> "11.12x".
    in.kv_pool_bytes = 5691LL * 16 * 131'072;
    CapacityPlan p = plan_capacity(preset("llama-3.1-8b"), in);
    const std::vector<std::string> log = engine_log_lines(p);
    CHECK(log.at(0) == "# GPU blocks: 5691, # CPU blocks: 2048");
    CHECK(log.at(1) == "Maximum concurrency for 8192 tokens per request: 11.12x");
}

TEST_CASE("vLLM hybrid manager: gpt-oss-120b, 5.38 GiB holds 78,384 tokens (hf-mem #60)") {
    // 18 sliding + 18 full layers, 8 KV heads of 64 at TP 1: page 16 x 8 x 128 x 2 B = 32,768 B; two groups of 18
    // layers share 18 tensors; num_blocks = pool // 32,768 // 18; tokens = num_blocks // 2 groups x 16.
    CapacityInputs in;
    in.gpu = gpu("h100-sxm");
    in.engine = Engine::Vllm;
    in.contexts = {8192};
    in.kv_pool_bytes = gib(5.38);
    CapacityPlan p = plan_capacity(preset("gpt-oss-120b"), in);
    REQUIRE(p.vllm);
    CHECK(p.vllm->group_size == 18);
    CHECK(p.vllm->groups.size() == 2);
    CHECK(p.vllm->page_bytes == 32'768);
    // 5.38 GiB printed to 0.01: [5.375, 5.385) GiB -> [78,272, 78,416] tokens; the log's 78,384 lies inside.
    in.kv_pool_bytes = gib(5.375);
    const std::int64_t lo = *plan_capacity(preset("gpt-oss-120b"), in).kv_cache_tokens;
    in.kv_pool_bytes = gib(5.385);
    const std::int64_t hi = *plan_capacity(preset("gpt-oss-120b"), in).kv_cache_tokens;
    CHECK(lo <= 78'384);
    CHECK(78'384 <= hi);
}

TEST_CASE("vLLM hybrid manager: gpt-oss-20b at 8,192 tokens x 32 requests allocates 12.00 GiB (hf-mem #70)") {
    // gpt-oss-20b is gpt-oss-120b's attention with 24 layers (12 sliding, 12 full). With 8,192 batched tokens a
    // sliding request needs cdiv(min(127 + 8,192, 8,192), 16) + 1 = 513 blocks and a full one 512: per request
    // (513 + 512) x 32,768 B x 12 layers = 403,046,400 B; x 32 = 12.01 GiB, the published "12.00 GiB".
    nlohmann::json cfg = nlohmann::json::parse(std::string(find_preset("gpt-oss-120b")->config_text));
    cfg["num_hidden_layers"] = 24;
    cfg["num_local_experts"] = 32;
    auto types = cfg["layer_types"];
    cfg["layer_types"] = nlohmann::json(std::vector<nlohmann::json>(types.begin(), types.begin() + 24));
    ModelSpec m = parse_model_config(cfg, "gpt-oss-20b.json");
    CapacityInputs in;
    in.gpu = gpu("h100-sxm");
    in.engine = Engine::Vllm;
    in.contexts = {8192};
    in.max_batched_tokens = 8192;
    in.kv_pool_bytes = gib(40);
    CapacityPlan p = plan_capacity(m, in);
    CHECK(p.rows.at(0).kv_bytes_per_request == 403'046'400);
    CHECK(std::abs(32.0 * 403'046'400 / kGiB - 12.00) < 0.02);
}

TEST_CASE("vLLM sliding-window worst case depends on max_num_batched_tokens") {
    // Mistral-7B-v0.1: every layer slides over 4,096 tokens. At 32,768 tokens a request needs
    // cdiv(min(4,095 + T, 32,768), 16) + 1 blocks: T = 8,192 -> 768 + 1 = 769; T = 2,048 -> 384 + 1 = 385.
    CapacityInputs in;
    in.gpu = gpu("h100-sxm");
    in.engine = Engine::Vllm;
    in.contexts = {32768};
    in.kv_pool_bytes = gib(40);
    in.max_batched_tokens = 8192;
    const ModelSpec m = fixture("configs/mistral-7b-v0.1.json");
    const std::int64_t page = 16 * 131'072;  // one block of all 32 layers: 16 x 32 x 8 x 128 x 2 x 2 B
    CHECK(plan_capacity(m, in).rows.at(0).kv_bytes_per_request == 769 * page);
    in.max_batched_tokens = 2048;
    CHECK(plan_capacity(m, in).rows.at(0).kv_bytes_per_request == 385 * page);
}

TEST_CASE("vLLM pads hybrid groups: Gemma-3-1B's 22 sliding + 4 full layers make 7 groups of 4 with 2 padding layers") {
    // _get_kv_cache_groups_uniform_page_size: group size = min(22, 4) = 4 (22 >= 1.5 x 4); sliding layers fill
    // ceil(22 / 4) = 6 groups, the last with 2 empty slots; full layers 1 group.
    CapacityInputs in;
    in.gpu = gpu("l4");
    in.engine = Engine::Vllm;
    in.contexts = {4096};
    in.kv_pool_bytes = gib(10);
    CapacityPlan p = plan_capacity(preset("gemma-3-1b"), in);
    REQUIRE(p.vllm);
    CHECK(p.vllm->group_size == 4);
    CHECK(p.vllm->groups.size() == 7);
    CHECK(p.vllm->padding_layers == 2);
}

TEST_CASE("vLLM raises the attention block size of a Mamba hybrid until one page holds a Mamba state") {
    // Jamba (fixture): 4 attention layers with 8 KV heads of 128 -> 4,096 B per token per layer; 28 Mamba layers
    // with d_inner 8,192, d_conv 4, d_state 16 -> (8,192 x 3 + 8,192 x 16) x 2 B = 311,296 B.
    // attn block = 16 x cdiv(311,296, 16 x 4,096) = 80 tokens, page 80 x 4,096 = 327,680 B (the Mamba page
    // is padded to it). Groups: min(4, 28) = 4 layers each -> 1 attention + 7 Mamba groups.
    CapacityInputs in;
    in.gpu = gpu("h100-sxm");
    in.engine = Engine::Vllm;
    in.contexts = {8192};
    in.kv_pool_bytes = gib(20);
    CapacityPlan p = plan_capacity(fixture("configs/jamba.json"), in);
    REQUIRE(p.vllm);
    CHECK(p.vllm->block_tokens == 80);
    CHECK(p.vllm->page_bytes == 327'680);
    CHECK(p.vllm->group_size == 4);
    CHECK(p.vllm->groups.size() == 8);
    // A request of 8,192 tokens: cdiv(8,192, 80) = 103 attention blocks + 7 Mamba blocks = 110 blocks of
    // 327,680 x 4 B.
    CHECK(p.rows.at(0).kv_bytes_per_request == 110LL * 327'680 * 4);
}

TEST_CASE("AIC: Qwen3-32B at TP 4 holds 0.3125 GiB per 5,120-token sequence per GPU") {
    // 64 layers x (8 / 4) KV heads x 128 x 2 x 2 B = 65,536 B per token per GPU; x 5,120 = 0.3125 GiB.
    ManualShape s;
    s.layers = 64;
    s.kv_heads = 8;
    s.head_dim = 128;
    s.heads = 64;
    s.hidden = 5120;
    CapacityInputs in;
    in.gpu = gpu("h200");
    in.tp = 4;
    in.contexts = {5120};
    in.kv_pool_bytes = gib(10);
    CapacityPlan p = plan_capacity(manual_model(s), in);
    CHECK(p.kv_bytes_per_token_per_gpu == 65'536);
    CHECK(p.rows.at(0).kv_bytes_per_request == gib(0.3125));
}

TEST_CASE("TP beyond the KV heads replicates them, MLA latents replicate on every rank") {
    // Llama-3.1-70B: 80 layers, 8 KV heads of 128. TP 16 > 8: one head per rank, 80 x 1 x 256 x 2 B = 40,960 B.
    CapacityInputs in;
    in.gpu = gpu("h100-sxm");
    in.tp = 16;
    in.contexts = {4096};
    CHECK(plan_capacity(preset("llama-3.1-70b"), in).kv_bytes_per_token_per_gpu == 40'960);
    // DeepSeek-V3: 61 layers x 576-element latent x 2 B = 70,272 B on every rank at TP 8.
    in.tp = 8;
    in.gpu = gpu("h200");
    CHECK(plan_capacity(preset("deepseek-v3"), in).kv_bytes_per_token_per_gpu == 70'272);
}

TEST_CASE("data-parallel replicas multiply requests, TP splits weights") {
    CapacityInputs in;
    in.gpu = gpu("h100-sxm");
    in.tp = 2;
    in.gpus = 8;
    in.contexts = {8192};
    CapacityPlan p = plan_capacity(preset("llama-3.1-70b"), in);
    CHECK(p.replicas == 4);
    CHECK(p.rows.at(0).max_requests_total == 4 * p.rows.at(0).max_requests);
    // Weights per GPU: half of every part, within rounding of one byte per part.
    CHECK(std::abs(p.budget.weights_bytes - p.model_weights_bytes / 2) <= 8);
    in.gpus = 7;
    CHECK_THROWS_WITH(plan_capacity(preset("llama-3.1-70b"), in), Catch::Contains("not a multiple"));
}

TEST_CASE("pipeline stages follow vLLM's get_pp_indices") {
    // 32 layers over 3 stages: 10 each, the 2 left over go to the stages before the last: 11, 11, 10.
    auto stages = pipeline_stages(32, 3);
    REQUIRE(stages.size() == 3);
    CHECK(stages[0].layers == 11);
    CHECK(stages[1].layers == 11);
    CHECK(stages[2].layers == 10);
    CHECK(stages[2].first_layer == 22);
    CHECK_THROWS(pipeline_stages(4, 5));
    // With PP 2 each stage holds half the layers, so half the KV per token per GPU.
    CapacityInputs in;
    in.gpu = gpu("h100-sxm");
    in.pp = 2;
    in.contexts = {8192};
    CHECK(plan_capacity(preset("llama-3.1-8b"), in).kv_bytes_per_token_per_gpu == 65'536);
}

TEST_CASE("a pipeline stage holds its own layers' weights: DeepSeek-V3's dense layers sit on stage 0") {
    // DeepSeek-V3 (fp8, 128 x 128 blocks, fp32 scales; embedding, head and router bf16) at TP 8, PP 4:
    // layers 15, 15, 16, 15. Per layer, by hand (fp8 [r x c] = r c + ceil(r/128) ceil(c/128) x 4 B):
    //   split over TP: q_b_proj [24,576 x 1,536] 37,757,952 B; kv_b_proj [32,768 x 512] 16,781,312 B;
    //   o_proj [7,168 x 16,384] 117,469,184 B; norms (2 x 7,168 + 1,536 + 512) x 2 B = 32,768 B;
    //   MoE: 256 + 1 experts of 3 x [2,048 x 7,168] fp8 (44,050,944 B each), router 256 x 7,168 x 2 B,
    //   its fp32 bias 1,024 B: 11,324,763,648 B; dense MLP: 3 x [18,432 x 7,168] fp8 = 396,458,496 B.
    //   Whole on every rank: q_a_proj [1,536 x 7,168] + kv_a_proj_with_mqa [576 x 7,168] = 15,142,624 B.
    // Stage 0: (3 x 568,499,712 + 12 x 11,496,804,864 + the embedding 129,280 x 7,168 x 2) / 8
    //   + 15 x 15,142,624 = 17,917,203,808 B, plus 15/61 of the final norm's 14,336 B over 8 ranks (441 B;
    //   the final norm is in no layer, so it is spread over the stages).
    // Stage 2: 16 x 11,496,804,864 / 8 + 16 x 15,142,624 = 23,235,891,712 B, plus its 471 B of the final norm.
    const ModelSpec m = preset("deepseek-v3");
    const WeightSizing w = size_weights(m);
    const auto stages = pipeline_stages(61, 4);
    CHECK(stage_weight_bytes(w, m, stages[0], 4, 8) == 17'917'204'249);
    CHECK(stage_weight_bytes(w, m, stages[2], 4, 8) == 23'235'892'183);
    // The fullest stage binds; spread evenly over the layers every stage came to 19.3-20.6 GiB.
    CapacityInputs in;
    in.gpu = gpu("h200");
    in.engine = Engine::Vllm;
    in.tp = 8;
    in.pp = 4;
    in.contexts = {4096};
    const CapacityPlan p = plan_capacity(m, in);
    CHECK(p.binding_stage == 2);
    CHECK(p.budget.weights_bytes == 23'235'892'183);
    // Only the last stage profiles the logits and sampler: stage 2's budget has no such term.
    for (const OverheadTerm& t : p.budget.overhead) CHECK(t.name != "logits and sampler buffers");
    // vLLM 0.6.6 logged "Loading model weights took 16.9583 GB" (GiB) on stage 0 of this layout
    // (deepseek-ai/DeepSeek-V3#205): kvplan's 16.69 GiB is within 2% of it.
    const double stage0_gib = static_cast<double>(stage_weight_bytes(w, m, stages[0], 4, 8)) / kGiB;
    CHECK(std::abs(stage0_gib - 16.9583) / 16.9583 < 0.02);
}

TEST_CASE("vLLM, SGLang and TensorRT-LLM keep copies of MLA's kv_b_proj for the decode path: vLLM only of a quantized one, TensorRT-LLM its K half") {
    // DeepSeek-V3: kv_b_proj is [128 heads x (128 + 128), 512] in fp8 with 128 x 128 blocks. vLLM's
    // W_UK_T and W_UV are its bf16 dequantization; SGLang's w_kc and w_vc likewise. Per GPU at TP 8:
    // 61 layers x 4,096 rows x 512 x 2 B = 255,852,544 B; at attention TP 1, 8 times that.
    const ModelSpec m = preset("deepseek-v3");
    const auto vllm = mla_decode_copy_term(m, Engine::Vllm, 0, 61, 8);
    REQUIRE(vllm.has_value());
    CHECK(vllm->bytes == 255'852'544);
    CHECK(vllm->in_pool);
    CHECK_THAT(vllm->basis, Catch::Contains("61 layers x 4,096 x 512 x 2 B (W_UK_T, W_UV)"));
    CHECK(mla_decode_copy_term(m, Engine::Sglang, 0, 61, 1)->bytes == 2'046'820'352);
    // A pipeline stage holds its own layers' copies: 16 of 61 on stage 2 of PP 4.
    CHECK(mla_decode_copy_term(m, Engine::Vllm, 30, 16, 8)->bytes == 16 * 4'096 * 512 * 2);
    // TensorRT-LLM keeps k_b_proj_trans, the K half transposed, fp8 with a
    // fp32 scale a 128 x 128 block (v_b_proj is a view): at TP 8, 61 layers x
    // (16 heads x 512 x 128 x 1 B + 16 x 4 x 1 x 4 B) = 63,978,752 B.
    const auto trt = mla_decode_copy_term(m, Engine::Trtllm, 0, 61, 8);
    REQUIRE(trt.has_value());
    CHECK(trt->bytes == 63'978'752);
    CHECK_THAT(trt->basis, Catch::Contains("61 layers x 1,048,832 B (k_b_proj_trans, fp8 with block scales)"));
    // The generic engine: none.
    CHECK_FALSE(mla_decode_copy_term(m, Engine::Generic, 0, 61, 8).has_value());
    // An unquantized checkpoint: vLLM's tensors are views of kv_b_proj (no bytes); SGLang's are
    // contiguous copies, bf16.
    ModelSpec bf16 = m;
    bf16.quantization = Quantization{};
    CHECK_FALSE(mla_decode_copy_term(bf16, Engine::Vllm, 0, 61, 8).has_value());
    // TensorRT-LLM's k_b_proj_trans is then bf16, no scales: 61 x 16 x 512 x 128 x 2 B.
    CHECK(mla_decode_copy_term(bf16, Engine::Trtllm, 0, 61, 8)->bytes == 127'926'272);
    CHECK(mla_decode_copy_term(bf16, Engine::Sglang, 0, 61, 8)->bytes == 255'852'544);
    // Fp8 without 128 x 128 blocks: SGLang requantizes per tensor, 1 B a value.
    ModelSpec per_channel = m;
    per_channel.quantization.block_rows = per_channel.quantization.block_cols = 0;
    per_channel.quantization.group_size = 0;
    CHECK(mla_decode_copy_term(per_channel, Engine::Sglang, 0, 61, 8)->bytes == 255'852'544 / 2);
    // No MLA, no copy.
    CHECK_FALSE(mla_decode_copy_term(preset("llama-3.1-8b"), Engine::Vllm, 0, 32, 1).has_value());
    // The plan subtracts it from the pool: vLLM at TP 8 on an H200 keeps 44,031,143,216 - 255,852,544
    // = 43,775,290,672 B.
    CapacityInputs in;
    in.gpu = gpu("h200");
    in.engine = Engine::Vllm;
    in.tp = 8;
    in.contexts = {4096};
    CHECK(plan_capacity(m, in).budget.kv_pool_bytes == 43'775'290'672);
    // Weights given by hand (an engine's "Model loading took" figure) already hold it: no term.
    in.weights_bytes = 84'952'064'032 + 255'852'544;
    CHECK(plan_capacity(m, in).budget.kv_pool_bytes == 43'775'290'672);
}

TEST_CASE("when weights alone exceed memory, the plan says so and names the smallest TP that fits") {
    // 14 GB of weights on a 10 GB device (util 1, no overhead): TP 1 leaves -4 GB. TP 2: 7 GB weights, 3 GB pool,
    // a 2,000-token request needs 2,000 x 262,144 B = 0.52 GB per GPU: it fits.
    CapacityInputs in;
    in.gpu = gpu_from_memory(10'000'000'000, "10 GB");
    in.mem_util = 1.0;
    in.overhead_bytes = 0;
    in.contexts = {2000};
    CapacityPlan p = plan_capacity(seven_b(), in);
    CHECK_FALSE(p.fits);
    CHECK(p.budget.kv_pool_bytes < 0);
    CHECK(p.smallest_tp == 2);
    // A sweep that tries every TP itself turns the search off: the same rows, no search.
    in.tp_search = false;
    const CapacityPlan q = plan_capacity(seven_b(), in);
    CHECK_FALSE(q.fits);
    CHECK_FALSE(q.tp_searched);
    CHECK_FALSE(q.smallest_tp.has_value());
    CHECK(q.rows.at(0).max_requests == p.rows.at(0).max_requests);
}

TEST_CASE("engine budgets: vLLM takes its fraction of total memory, TensorRT-LLM of free memory, SGLang keeps activations out") {
    CapacityInputs in = on_memory(gib(80), 0.9, gib(20), gib(2), {4096});
    in.engine = Engine::Generic;
    // 72 - 20 - 2 = 50 GiB.
    CHECK(plan_capacity(seven_b(), in).budget.kv_pool_bytes == gib(50));
    // 0.9 x (80 - 20 - 2) = 52.2 GiB.
    in.engine = Engine::Trtllm;
    CHECK(std::abs(plan_capacity(seven_b(), in).budget.kv_pool_bytes - gib(52.2)) <= 1);
    // SGLang's default fraction by TP (sglang/srt/server_args.py): 0.88 at TP 1, 0.85 at TP 4, 0.79 at TP 16.
    CHECK(default_mem_fraction(Engine::Sglang, 1) == 0.88);
    CHECK(default_mem_fraction(Engine::Sglang, 4) == 0.85);
    CHECK(default_mem_fraction(Engine::Sglang, 16) == 0.79);
    // SGLang's estimated activation and sampler terms sit in the (1 - fraction) headroom, not the pool.
    CapacityInputs s;
    s.gpu = gpu("h100-sxm");
    s.engine = Engine::Sglang;
    s.contexts = {4096};
    CapacityPlan sp = plan_capacity(preset("llama-3.1-8b"), s);
    for (const OverheadTerm& t : sp.budget.overhead)
        if (t.name.find("activation") != std::string::npos) CHECK_FALSE(t.in_pool);
}

TEST_CASE("vLLM's batch defaults: 8,192 tokens and 1,024 sequences on >= 70 GiB devices that are not A100s") {
    // vllm/engine/arg_utils.py get_batch_defaults (OPENAI_API_SERVER).
    CHECK(default_max_batched_tokens(Engine::Vllm, gpu("h100-sxm"), 8192) == 8192);
    CHECK(default_max_num_seqs(Engine::Vllm, gpu("h100-sxm")) == 1024);
    CHECK(default_max_batched_tokens(Engine::Vllm, gpu("a100-sxm-80gb"), 8192) == 2048);
    CHECK(default_max_num_seqs(Engine::Vllm, gpu("a100-sxm-80gb")) == 256);
    CHECK(default_max_batched_tokens(Engine::Vllm, gpu("l4"), 8192) == 2048);
    // V0 without chunked prefill profiles max(max_model_len, 2048) tokens.
    CHECK(default_max_batched_tokens(Engine::VllmV0, gpu("l4"), 20000) == 20000);
}

TEST_CASE("the overhead estimate reproduces llm-d's measured Llama-3.1-8B activation peak on an H100") {
    // llm-d empirical-vllm-memory-results: Llama-3.1-8B activation 4.76 GiB (vLLM V1, 8,192 batched tokens).
    // Estimate (docs/concurrency.md): max(forward 8,192 x (3 x 14,336 + 3 x 4,096) x 2 B = 0.84 GiB,
    // hidden states (8,192 + 2 x 1,024) x 4,096 x 2 B + 1,024 x 128,256 x 38 B = 4.73 GiB), plus 32 MiB of
    // cuBLAS workspace (a separate term) = 4.76 GiB.
    CapacityInputs in;
    in.gpu = gpu("h100-sxm");
    in.engine = Engine::Vllm;
    in.contexts = {8192};
    CapacityPlan p = plan_capacity(preset("llama-3.1-8b"), in);
    std::int64_t activation = 0;
    for (const OverheadTerm& t : p.budget.overhead)
        if (t.name.find("activation") != std::string::npos || t.name.find("sampler") != std::string::npos || t.name == "cuBLAS workspace")
            activation += t.bytes;
    CHECK(std::abs(activation / kGiB - 4.76) < 0.01);
    // And the KV pool llm-d measured, 51.38 GiB (79.18 GiB x 0.9 - 14.99 - 4.76 - 0.13 - graphs), within 1%.
    CHECK(std::abs(p.budget.kv_pool_bytes / kGiB / 51.38 - 1) < 0.01);
}

namespace {

// llm-d's H100 table (config_explorer/empirical-vllm-memory-results.md, in
// shared/reference/vllm_memory.md): the "activation" column is vLLM's
// torch_peak_increase, printed to 0.01 GiB.
struct LlmdRow {
    const char* name;
    std::function<ModelSpec()> model;
    std::int64_t tp;
    double activation_gib;
};

ModelSpec qwen3(std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t intermediate, bool tied) {
    return from_json(R"({"model_type": "qwen3", "num_hidden_layers": )" + std::to_string(layers) + R"(, "hidden_size": )" + std::to_string(hidden) +
                     R"(, "num_attention_heads": )" + std::to_string(heads) +
                     R"(, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": )" + std::to_string(intermediate) +
                     R"(, "max_position_embeddings": 40960, "vocab_size": 151936, "tie_word_embeddings": )" + (tied ? "true" : "false") +
                     R"(, "torch_dtype": "bfloat16"})");
}

std::vector<LlmdRow> llmd_rows() {
    // gpt-oss-20b and -120b share what the profile peak depends on (hidden 2,880, vocabulary 201,088, 4 experts
    // of 2,880 per token), so the 120b preset stands for both; Llama-3.3-70B has Llama-3.1-70B's shape.
    auto oss = [] { return preset("gpt-oss-120b"); };
    auto qwen06 = [] { return qwen3(28, 1024, 16, 3072, true); };
    auto qwen32 = [] { return qwen3(64, 5120, 64, 25600, false); };
    return {{"gpt-oss-20b", oss, 1, 7.38},
            {"gpt-oss-120b", oss, 1, 7.38},
            {"Llama-3.3-70B-FP8 TP 2", [] { return preset("llama-3.1-70b"); }, 2, 4.84},
            {"Llama-3.1-8B", [] { return preset("llama-3.1-8b"); }, 1, 4.76},
            {"Qwen3-0.6B", qwen06, 1, 5.56},
            {"Qwen3-32B", qwen32, 1, 5.64},
            {"Qwen3-32B TP 2", qwen32, 2, 5.64}};
}

}  // namespace

TEST_CASE("vLLM V1's profile peak, derived from its code, reproduces every llm-d H100 activation row within 0.02 GiB") {
    // No constant here is fitted: 38 B per row per vocabulary entry is the PyTorch sort's buffers
    // (overhead.cpp), the rows are min(1,024 sequences, 8,192 tokens), the peak is the max of the forward
    // pass and hidden states + sampler, plus PyTorch's 32 MiB Hopper cuBLAS workspace. 0.02 GiB covers the
    // table's 0.005 GiB rounding and the allocator's block rounding. (Mistral-Small-3.2, 2.12 GiB, is
    // multimodal; its profile is not this one and it is left out.)
    std::string report;
    for (const LlmdRow& row : llmd_rows()) {
        INFO(row.name);
        OverheadInputs in{Engine::Vllm, row.tp, 8192, 1024, VllmSampler::PyTorchSort, true};
        const VllmProfilePeak peak = vllm_profile_peak(row.model(), in);
        CHECK(peak.sampler_rows == 1024);
        CHECK(peak.bytes_per_entry == 38);
        CHECK(peak.peak_bytes() > peak.forward_bytes);  // the sampler side sets every row's peak
        const double predicted = static_cast<double>(peak.peak_bytes() + cublas_workspace_bytes(true)) / kGiB;
        char line[160];
        std::snprintf(line, sizeof line, "%s: measured %.2f GiB, predicted %.3f GiB (%+.2f%%)\n", row.name, row.activation_gib, predicted,
                      (predicted / row.activation_gib - 1) * 100);
        report += line;
        CHECK(std::abs(predicted - row.activation_gib) <= 0.02);
    }
    std::printf("%s", report.c_str());
}

TEST_CASE("the profile peak is the larger of the forward pass and the sampler side, not their sum") {
    // Llama-3.1-8B at 65,536 batched tokens, 1,024 sequences: forward 65,536 x 110,592 B = 7,247,757,312 B;
    // sampler side (65,536 + 2,048) x 8,192 B + 1,024 x 128,256 x 38 B = 553,648,128 + 4,990,697,472 =
    // 5,544,345,600 B. The peak is the forward's, and the sampler term adds nothing to it.
    const ModelSpec m = preset("llama-3.1-8b");
    OverheadInputs in{Engine::Vllm, 1, 65536, 1024, VllmSampler::PyTorchSort, false};
    const VllmProfilePeak peak = vllm_profile_peak(m, in);
    CHECK(peak.forward_bytes == 7'247'757'312);
    CHECK(peak.hidden_states_bytes + peak.sampler_bytes == 5'544'345'600);
    CHECK(peak.peak_bytes() == 7'247'757'312);
    for (const OverheadTerm& t : estimate_overhead(m, in))
        if (t.name == "logits and sampler buffers") CHECK(t.bytes == 0);
    // At 8,192 tokens the sampler side wins: 83,886,080 + 4,990,697,472 = 5,074,583,552 B.
    in.max_batched_tokens = 8192;
    CHECK(vllm_profile_peak(m, in).peak_bytes() == 5'074'583'552);
}

TEST_CASE("the dummy sampler's rows and bytes per vocabulary entry follow vLLM's and PyTorch's code paths") {
    const ModelSpec m = preset("llama-3.1-8b");
    auto peak = [&](std::int64_t tokens, std::int64_t seqs, VllmSampler s) {
        return vllm_profile_peak(m, OverheadInputs{Engine::Vllm, 1, tokens, seqs, s, false});
    };
    // _dummy_run: min(max_batched_tokens, max_num_seqs) requests, one sampled row each.
    CHECK(peak(2048, 256, VllmSampler::PyTorchSort).sampler_rows == 256);
    CHECK(peak(100, 256, VllmSampler::PyTorchSort).sampler_rows == 100);
    // PyTorch's sort: segmented_sort_pairs from 128 rows (38 B), a full sort below (50 B), one row (18 B).
    CHECK(peak(128, 1024, VllmSampler::PyTorchSort).bytes_per_entry == 38);
    CHECK(peak(127, 1024, VllmSampler::PyTorchSort).bytes_per_entry == 50);
    CHECK(peak(1, 1024, VllmSampler::PyTorchSort).bytes_per_entry == 18);
    // The Triton kernel (vLLM >= 0.16.1) from 8 rows: 14 B, plus its [128, vocab] fp32 buffer; below 8 rows
    // vLLM still sorts.
    const VllmProfilePeak t = peak(2048, 256, VllmSampler::Triton);
    CHECK(t.bytes_per_entry == 14);
    CHECK(t.triton_buffer_bytes == 128 * 128256 * 4);
    // 256 x 128,256 x 14 + 65,667,072 = 525,336,576 B; hidden states (2,048 + 512) x 8,192 = 20,971,520 B.
    CHECK(t.sampler_bytes == 525'336'576);
    CHECK(t.hidden_states_bytes == 20'971'520);
    CHECK(peak(2048, 4, VllmSampler::Triton).bytes_per_entry == 50);
    CHECK(peak(2048, 16, VllmSampler::Triton).triton_buffer_bytes == 16 * 128256 * 4);
    // Which releases take the Triton path.
    CHECK(vllm_sampler_for_version(0, 16, 0) == VllmSampler::PyTorchSort);
    CHECK(vllm_sampler_for_version(0, 16, 1) == VllmSampler::Triton);
    CHECK(vllm_sampler_for_version(0, 19, 0) == VllmSampler::Triton);
    CHECK(vllm_sampler_for_version(0, 11, 0) == VllmSampler::PyTorchSort);
    // PyTorch's cuBLAS workspace: 32 MiB on Hopper, 8,519,680 B elsewhere.
    CHECK(cublas_workspace_bytes(true) == 33'554'432);
    CHECK(cublas_workspace_bytes(false) == 8'519'680);
    CHECK(hopper_gpu(gpu("h100-sxm")));
    CHECK_FALSE(hopper_gpu(gpu("rtx-4090")));
}

TEST_CASE("the measured vLLM 0.19 run on an RTX 4090: 2,588 blocks, which kvplan over-predicts by less than 6%") {
    // tests/fixtures/reference/serving/RTX4090_Llama-3.1-8B/meta.json: vLLM 0.19.0, torch's total
    // 25,250,627,584 B (what vLLM's MemorySnapshot reads), utilization 0.9, 256 sequences, 2,048 batched
    // tokens, max_model_len 32,768, bf16, 16-token blocks: num_gpu_blocks 2,588.
    std::ifstream f(std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/reference/serving/RTX4090_Llama-3.1-8B/meta.json");
    REQUIRE(f.good());
    const nlohmann::json meta = nlohmann::json::parse(f);
    CapacityInputs in;
    in.gpu = gpu("rtx-4090");
    in.gpu.cuda_total_bytes = meta["hardware"]["device_total_memory_bytes"].get<std::int64_t>();
    in.engine = Engine::Vllm;
    in.mem_util = meta["kv_cache"]["gpu_memory_utilization"].get<double>();
    in.max_model_len = meta["engine_kwargs"]["max_model_len"].get<std::int64_t>();
    in.max_batched_tokens = meta["engine_kwargs"]["max_num_batched_tokens"].get<std::int64_t>();
    in.max_num_seqs = meta["engine_kwargs"]["max_num_seqs"].get<std::int64_t>();
    in.block_size = meta["kv_cache"]["block_size"].get<std::int64_t>();
    in.contexts = {*in.max_model_len};
    in.vllm_sampler = vllm_sampler_for_version(0, 19, 0);
    const std::int64_t measured = meta["kv_cache"]["num_gpu_blocks"].get<std::int64_t>();
    REQUIRE(measured == 2588);
    const CapacityPlan p = plan_capacity(preset("llama-3.1-8b"), in);
    // Pool: floor(25,250,627,584 x 0.9) = 22,725,564,825 - 16,060,522,496 weights - 375,809,638 non-torch -
    // max(226,492,416 forward, 20,971,520 hidden + 525,336,576 sampler) - 8,519,680 cuBLAS = 5,734,404,915 B,
    // 2,734 blocks of 2,097,152 B (+5.6%). What vLLM 0.19 subtracts beyond that, about 0.29 GiB, is not in
    // its code's profile of the forward pass and sampler: the rotary cos/sin cache it counts with the
    // weights (32 MiB) and the non-torch memory its discarded CUDA-graph profiling leaves
    // (docs/concurrency.md). No reference run but this one measures it, so kvplan does not fit it; the
    // tolerance says so.
    REQUIRE(p.num_blocks);
    CHECK(*p.num_blocks == 2734);
    CHECK(*p.num_blocks >= measured);
    CHECK(static_cast<double>(*p.num_blocks) / static_cast<double>(measured) - 1 < 0.06);
    // Without --vllm-version kvplan assumes the older sort path: 1,247,674,368 B of sampler buffers,
    // 2,389 blocks (-7.7%), the under-estimate side.
    in.vllm_sampler = VllmSampler::PyTorchSort;
    const CapacityPlan old_path = plan_capacity(preset("llama-3.1-8b"), in);
    REQUIRE(old_path.num_blocks);
    CHECK(*old_path.num_blocks == 2389);
}
