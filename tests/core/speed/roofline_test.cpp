// The step-cost model and the roofline: the seeds' arithmetic, the terms of a
// step derived by hand, MoE expert reads, tensor-parallel all-reduces,
// calibration and weight formats.
#include "core/speed/roofline.hpp"

#include <cmath>

#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "core/memory/parallel.hpp"
#include "core/speed/calibration.hpp"
#include "core/speed/step_cost.hpp"
#include "io/engine_db.hpp"
#include "io/gpu_db.hpp"
#include "speed_fixtures.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

CostModel cost(const ModelSpec& m, const Gpu& g, Efficiency e = pure(), std::int64_t tp = 1, const std::string& format = "auto") {
    return make_cost_model(CostModelInputs{&m, g, parse_weight_format("--weights-dtype", format), std::nullopt, tp, e, std::nullopt});
}

ModelSpec shape13b() {  // seed 002: 40 layers x 40 heads x 128, 819,200 B/token in bf16
    ManualShape s;
    s.layers = 40;
    s.kv_heads = 40;
    s.head_dim = 128;
    s.params = 13'000'000'000;
    return manual_model(s);
}

}  // namespace

TEST_CASE("seed 002: reading a 3.1 GiB cache over ~2 TB/s costs roughly 1.5 ms per token") {
    // 4,096 tokens x 819,200 B = 3.36e9 B (3.125 GiB) / 2e12 B/s = 1.68 ms: the seed's "roughly 1.5 ms".
    StepCost s = decode_step(cost(shape13b(), ideal_gpu()), 1, 4096);
    CHECK(s.kv_read_bytes == Approx(4096.0 * 819'200));
    const double cache_s = s.kv_read_bytes / 2e12;
    CHECK(cache_s == Approx(1.68e-3).epsilon(0.01));
    CHECK(std::abs(cache_s / 1.5e-3 - 1) < 0.15);
}

TEST_CASE("seed 000: decode does about 2 FLOPs per weight element, a 500-token prefill is compute-bound on an H100") {
    // A matrix-vector product does 2 x M x N FLOPs over M x N weights.
    const ModelSpec m = preset("llama-3.1-8b");
    const CostModel c = cost(m, gpu("h100-sxm"), Efficiency{});
    StepCost d = decode_step(c, 1, 1);
    CHECK(d.matmul_flops / static_cast<double>(c.active_params) == Approx(2.0));
    // In bytes: bf16 weights carry 2 B per element, so about 1 FLOP per byte: hundreds below the H100's ratio.
    CHECK(d.matmul_flops / d.weight_bytes == Approx(1.0).epsilon(0.05));
    CHECK_FALSE(d.compute_bound);
    // Prefill reuses each weight across 500 tokens: 500x the arithmetic intensity.
    StepCost p = prefill_step(c, 1, 500);
    CHECK(p.compute_bound);
    CHECK(p.flops() / p.bytes() > 400);
}

TEST_CASE("a decode step's terms, derived by hand") {
    // The seeds' 7B shape (32 x 32 x 128, 7e9 parameters, fp16) on the ideal device: weights 14e9 B, KV per
    // sequence at 1,000 tokens 1,000 x 524,288 B, written 524,288 B; batch 4.
    ManualShape s;
    s.layers = 32;
    s.kv_heads = 32;
    s.head_dim = 128;
    s.params = 7'000'000'000;
    const ModelSpec m = manual_model(s);
    const CostModel c = cost(m, ideal_gpu());
    StepCost d = decode_step(c, 4, 1000);
    CHECK(d.weight_bytes == Approx(14e9));
    CHECK(d.kv_read_bytes == Approx(4 * 1000 * 524'288.0));
    CHECK(d.kv_write_bytes == Approx(4 * 524'288.0));
    CHECK(d.matmul_flops == Approx(4 * 2 * 7e9));
    // Attention: 32 layers x 32 heads x 2 x (128 + 128) FLOPs per attended token, 1,001 tokens, 4 sequences.
    CHECK(d.attention_flops == Approx(4.0 * 32 * 32 * 2 * 256 * 1001));
    CHECK(d.memory_s == Approx(d.bytes() / 2e12));
    CHECK(d.total_s == Approx(std::max(d.memory_s, d.compute_s)));
    // KV reads equal weight reads when B x 1,000 x 524,288 >= 14e9: B = 26.7 -> 27.
    RooflineInputs in;
    in.batches = {1};
    in.context = 1000;
    in.prompt = 100;
    in.output = 10;
    CHECK(make_roofline(c, in).kv_equals_weights_batch == 27);
}

TEST_CASE("MoE decode reads only the experts the batch touches: E x (1 - (1 - k/E)^B)") {
    CHECK(experts_touched(8, 2, 1) == Approx(2.0));
    CHECK(experts_touched(8, 2, 2) == Approx(8 * (1 - 0.75 * 0.75)));  // 3.5
    CHECK(experts_touched(128, 8, 1000) == Approx(128.0).epsilon(1e-6));
    // Mixtral-8x7B: one token reads 2 of 8 experts per layer; a large batch reads all of them.
    const CostModel c = cost(preset("mixtral-8x7b"), gpu("h100-sxm"));
    const double one = decode_step(c, 1, 1).weight_bytes, many = decode_step(c, 512, 1).weight_bytes;
    CHECK(many - c.dense_weight_bytes == Approx(4.0 * (one - c.dense_weight_bytes)).epsilon(1e-6));
    CHECK(many == Approx(c.weight_bytes_total - 262'144'000).epsilon(0.01));  // everything but the embedding table
}

TEST_CASE("tensor parallelism leaves MLA's down-projections whole: each rank reads and multiplies its copy (DeepSeek-V3, TP 8)") {
    const ModelSpec m = preset("deepseek-v3");
    const CostModel one = cost(m, ideal_gpu()), eight = cost(m, ideal_gpu(), pure(), 8);
    // Read every step: every part but the embedding table and the routed
    // experts, 11,416,215,392 + 1,189,375,488 + 2,554,954,752 + 212,920,320
    // + 2,013,184 + 1,853,358,080 = 17,228,837,216 B; q_a_proj and
    // kv_a_proj_with_mqa, 923,700,064 B of it, stay whole on each of 8 ranks.
    CHECK(one.dense_weight_bytes == Approx(17'228'837'216.0));
    CHECK(eight.dense_weight_bytes == Approx((17'228'837'216.0 - 923'700'064.0) / 8 + 923'700'064.0));
    // Their 61 x (1,536 + 576) x 7,168 parameters are multiplied in full on every rank.
    const double copies = 61.0 * (1536 + 576) * 7168;
    CHECK(eight.matmul_flops_per_token == Approx(2.0 * ((one.matmul_flops_per_token / 2.0 - copies) / 8 + copies)));
}

TEST_CASE("tensor parallelism splits weights and adds two ring all-reduces per layer") {
    const ModelSpec m = preset("llama-3.1-70b");
    const CostModel one = cost(m, ideal_gpu()), four = cost(m, ideal_gpu(), pure(), 4);
    CHECK(four.dense_weight_bytes == Approx(one.dense_weight_bytes / 4));
    StepCost s = decode_step(four, 8, 1024);
    // 160 all-reduces of 8 tokens x 8,192 x 2 B; each rank moves 2 x 3/4 of it over 100 GB/s.
    CHECK(s.allreduce_s == Approx(160 * (2.0 * 0.75 * 8 * 8192 * 2 / 100e9)));
    CHECK(decode_step(one, 8, 1024).allreduce_s == 0);
}

TEST_CASE("weights stream at the memory technology's fraction, the KV cache at the attention kernels'") {
    Efficiency e;
    e.step_overhead_s = 0;
    const Gpu& h100 = gpu("h100-sxm");
    CHECK(e.profile.weights_fraction(h100) == 0.55);             // HBM3
    CHECK(e.profile.weights_fraction(gpu("rtx-4090")) == 0.88);  // GDDR6X
    CHECK(e.profile.weights_fraction(gpu("m2-ultra")) == 0.80);  // LPDDR5
    const CostModel c = cost(preset("llama-3.1-8b"), h100, e);
    CHECK(c.weights_bandwidth_bytes_per_s == Approx(0.55 * 3.35e12));
    CHECK(c.bandwidth_bytes_per_s == Approx(0.85 * 3.35e12));
    StepCost s = decode_step(c, 16, 4096);
    CHECK(s.memory_s == Approx(s.weight_bytes / (0.55 * 3.35e12) + (s.kv_read_bytes + s.kv_write_bytes) / (0.85 * 3.35e12)));
    // A step never gets cheaper with a larger batch.
    double last = 0;
    for (std::int64_t b = 1; b <= 1024; b *= 2) {
        const double t = decode_step(c, b, 4096).total_s;
        CHECK(t >= last);
        last = t;
    }
}

TEST_CASE("llama.cpp formats: q8_0 8.5, q4_0 4.5, q4_k_m about 4.85 bits per weight") {
    // Llama-3-8B Q4_K_M is published as 4.92 GB (4.58 GiB) for 8.03 B parameters (llama.cpp README sizes, via
    // XiongjieDai/GPU-Benchmarks-on-LLM-Inference): kvplan within 2%.
    const ModelSpec m = preset("llama-3.1-8b");
    const double q4km = static_cast<double>(size_weights_in(m, parse_weight_format("--weights-dtype", "q4_k_m")).bytes);
    CHECK(std::abs(q4km / 4.92e9 - 1) < 0.02);
    CHECK(static_cast<double>(size_weights_in(m, parse_weight_format("--weights-dtype", "q8_0")).bytes) ==
          Approx(8'030'261'248 * 8.5 / 8).epsilon(0.001));
    CHECK(static_cast<double>(size_weights_in(m, parse_weight_format("--weights-dtype", "q4_0")).bytes) ==
          Approx(8'030'261'248 * 4.5 / 8).epsilon(0.001));
    // int4 (GPTQ/AWQ style) quantizes the linear layers only: embeddings and head stay 16-bit.
    const double int4 = static_cast<double>(size_weights_in(m, parse_weight_format("--weights-dtype", "int4")).bytes);
    CHECK(int4 == Approx(2 * 525'336'576 * 2.0 + (8'030'261'248 - 2 * 525'336'576 - 266'240) * 4.125 / 8 + 266'240 * 2).epsilon(0.001));
    CHECK_THROWS_AS(parse_weight_format("--weights-dtype", "q3_k"), Error);
}

TEST_CASE("a calibration replaces the datasheet fractions") {
    nlohmann::json j = {{"schema_version", 1},
                        {"device", "NVIDIA H200"},
                        {"measured_bandwidth_bytes_per_s", 4.2e12},
                        {"measured_flops_per_s", 7.0e14},
                        {"step_overhead_s", 0.0004}};
    Calibration cal = parse_calibration(j, "cal.json");
    Efficiency e = apply_calibration(Efficiency{}, cal, "cal.json");
    const CostModel c = cost(preset("llama-3.1-8b"), gpu("h200"), e);
    CHECK(c.bandwidth_bytes_per_s == 4.2e12);
    CHECK(c.weights_bandwidth_bytes_per_s == 4.2e12);
    CHECK(c.flops_per_s == 7.0e14);
    CHECK(c.step_overhead_s == 0.0004);
    j.erase("measured_bandwidth_bytes_per_s");
    CHECK_THROWS_WITH(parse_calibration(j, "cal.json"), Catch::Contains("cal.json") && Catch::Contains("measured_bandwidth_bytes_per_s"));
    j["measured_bandwidth_bytes_per_s"] = -5;
    CHECK_THROWS_WITH(parse_calibration(j, "cal.json"), Catch::Contains("measured_bandwidth_bytes_per_s"));
    j["measured_bandwidth_bytes_per_s"] = 1e12;
    j["schema_version"] = 3;
    CHECK_THROWS_WITH(parse_calibration(j, "cal.json"), Catch::Contains("schema_version"));
}

TEST_CASE("roofline rows: throughput per user falls, total rises, rows beyond memory do not fit") {
    const CostModel c = cost(preset("llama-3.1-8b"), gpu("h100-sxm"), Efficiency{});
    RooflineInputs in;
    in.batches = {1, 8, 64, 512};
    in.context = 4096;
    in.max_batch = 100;
    in.price_per_hour = 2.0;
    Roofline r = make_roofline(c, in);
    REQUIRE(r.rows.size() == 4);
    for (std::size_t i = 1; i < r.rows.size(); ++i) {
        CHECK(r.rows[i].tokens_per_s_per_user < r.rows[i - 1].tokens_per_s_per_user);
        CHECK(r.rows[i].tokens_per_s_total > r.rows[i - 1].tokens_per_s_total);
        CHECK(r.rows[i].kv_share > r.rows[i - 1].kv_share);
    }
    CHECK(r.rows[2].fits);
    CHECK_FALSE(r.rows[3].fits);
    // $ per million tokens = price x GPUs / 3600 / tokens per second x 1e6.
    CHECK(*r.rows[0].usd_per_million_tokens == Approx(2.0 / 3600 / r.rows[0].tokens_per_s_total * 1e6));
    REQUIRE(r.ceiling);
    CHECK(r.ceiling->batch == 100);
    CHECK(r.ttft_s == Approx(prefill_step(c, 1, in.prompt).total_s));
}

TEST_CASE("a decode step from its batch-only and context-only terms is decode_step's, bit for bit") {
    // The sweep's hoisted terms must not change a figure: the same sums in
    // the same order. A dense model at TP 2 (all-reduces), an MoE (expert
    // reads, the grouped-GEMM shortfall) and a pipeline stage (the send), on
    // the vLLM profile (fixed costs, the GEMM fall-off at few tokens).
    Efficiency vllm;
    vllm.profile = find_engine("--engine", "vllm");
    const ModelSpec dense = preset("llama-3.1-8b"), moe = preset("mixtral-8x7b");
    const CostModelInputs staged{&dense, gpu("h100-sxm"), WeightFormat{}, std::nullopt, 2, vllm, std::nullopt};
    const std::vector<CostModel> models = {cost(dense, gpu("h100-sxm"), vllm, 2), cost(moe, gpu("a100-sxm-80gb"), vllm, 1),
                                           make_stage_cost_model(staged, pipeline_stages(32, 2)[0], 2)};
    for (const CostModel& m : models)
        for (std::int64_t batch : {1, 7, 256})
            for (std::int64_t context : {1, 4096, 131072}) {
                const StepCost a = decode_step(m, batch, context);
                const StepCost b = decode_step(m, decode_batch_terms(m, batch), decode_seq_terms(m, context));
                CHECK(a.total_s == b.total_s);
                CHECK(a.memory_s == b.memory_s);
                CHECK(a.compute_s == b.compute_s);
                CHECK(a.allreduce_s == b.allreduce_s);
                CHECK(a.send_s == b.send_s);
                CHECK(a.weight_bytes == b.weight_bytes);
            }
    CHECK(decode_step(models[2], 8, 1024).send_s > 0);  // the stage's send is in the comparison
}
