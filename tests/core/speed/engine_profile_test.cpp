// Engine profiles (models/engines/*.json), the interconnect latency table
// (models/interconnects.json) and the formats engines store: parsing,
// lookups, and what they do to a step, each figure derived by hand.
#include "core/speed/engine_profile.hpp"

#include <cmath>

#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "core/model/weight_format.hpp"
#include "core/speed/step_cost.hpp"
#include "io/engine_db.hpp"
#include "speed_fixtures.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

std::string data_error_of(const nlohmann::json& j) {
    try {
        parse_engine_profile(j, "p.json");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Data);
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("every bundled profile parses with generic first and generic is the step-cost model's defaults") {
    const auto& all = bundled_engines();
    REQUIRE(all.size() == 8);
    CHECK(all.front().id == "generic");
    const EngineProfile& g = find_engine("--engine", "generic");
    const EngineProfile defaults;  // what Efficiency{} prices with
    for (const std::string& name : profile_value_names()) {
        INFO(name);
        CHECK(profile_value(g, name) == profile_value(defaults, name));
    }
    CHECK(g.allreduce == AllreduceImpl::Fixed);
    CHECK(g.fixed_allreduce_latency_s == 5e-6);
    CHECK_THROWS_WITH(find_engine("--engine", "tgi"), Catch::Contains("--engine tgi: no such engine profile") && Catch::Contains("llamacpp"));
}

TEST_CASE("a profile file with a bad value names the file and the field") {
    nlohmann::json ok = {{"schema_version", 1}, {"id", "x"}};
    CHECK(data_error_of(ok).empty());
    auto with = [&](const char* key, nlohmann::json v) {
        nlohmann::json j = ok;
        j[key] = v;
        return data_error_of(j);
    };
    CHECK_THAT(with("kv_fraction", 1.5), Catch::Contains("p.json: kv_fraction: expected efficiency fraction in [0.01, 1]"));
    CHECK_THAT(with("step_overhead_s", -1), Catch::Contains("p.json: step_overhead_s"));
    CHECK_THAT(with("speed", 1), Catch::Contains("p.json: speed: unknown field"));
    CHECK_THAT(with("weights_fraction", nlohmann::json{{"hbm", 0}}), Catch::Contains("weights_fraction.hbm"));
    CHECK_THAT(with("kernel_factor", nlohmann::json{{"awq", 0.9}}), Catch::Contains("kernel_factor.awq: unknown weight format family"));
    CHECK_THAT(with("allreduce", nlohmann::json{{"implementation", "mpi"}}), Catch::Contains("allreduce.implementation"));
    CHECK_THAT(with("fitted_on", nlohmann::json{{"speed", "rows"}}), Catch::Contains("fitted_on.speed: not a profile value"));
    CHECK_THAT(with("kv_cache_dtype", "q8_0"), Catch::Contains("p.json: kv_cache_dtype: expected fp32, fp16"));
    CHECK_THAT(with("kv_cache_dtype", "auto"), Catch::Contains("p.json: kv_cache_dtype: expected"));
    CHECK_THAT(data_error_of(nlohmann::json::array()), Catch::Contains("expected a JSON object"));
}

TEST_CASE("all-reduce latency: the table's figure interpolated in log2 GPUs and held flat beyond it") {
    // NCCL over NVLink: 10.14 us at 2 GPUs (NVIDIA/nccl#583), 16.88 at 4 (nccl-tests#123), 20.71 at 8.
    const auto& t = bundled_link_latencies();
    CHECK(*allreduce_latency(t, AllreduceImpl::Nccl, LinkFamily::Nvlink, 2) == Approx(10.14e-6));
    CHECK(*allreduce_latency(t, AllreduceImpl::Nccl, LinkFamily::Nvlink, 8) == Approx(20.71e-6));
    // 6 GPUs: log2 6 = 2.585, 0.585 of the way from 4 to 8: 16.88 + 0.585 x (20.71 - 16.88) = 19.12 us.
    CHECK(*allreduce_latency(t, AllreduceImpl::Nccl, LinkFamily::Nvlink, 6) == Approx(16.88e-6 + (std::log2(6.0) - 2) * 3.83e-6));
    CHECK(*allreduce_latency(t, AllreduceImpl::Nccl, LinkFamily::Nvlink, 16) == Approx(20.71e-6));  // beyond 8: flat
    CHECK_FALSE(allreduce_latency(t, AllreduceImpl::CustomOneShot, LinkFamily::Pcie, 2));

    // vLLM's custom all-reduce on NVLink at TP 8 (14.2 us, sglang#2688); over PCIe it falls back to NCCL (42.14 us at
    // 8, nccl#1530), as vLLM does past two PCIe GPUs; and at TP 3, a world size it has no kernel for, NCCL too.
    const EngineProfile& vllm = find_engine("--engine", "vllm");
    CHECK(vllm.allreduce_latency_s(gpu("h100-sxm"), 8) == Approx(14.2e-6));
    CHECK(vllm.allreduce_latency_s(gpu("l40s"), 8) == Approx(42.14e-6));
    CHECK(vllm.allreduce_latency_s(gpu("h100-sxm"), 3) == Approx(*allreduce_latency(t, AllreduceImpl::Nccl, LinkFamily::Nvlink, 3)));
    CHECK(find_engine("--engine", "generic").allreduce_latency_s(gpu("h100-sxm"), 8) == 5e-6);
}

TEST_CASE("the link a device's all-reduce runs over, from its interconnect") {
    CHECK(link_family(gpu("h100-sxm")) == LinkFamily::Nvlink);
    CHECK(link_family(gpu("h100-pcie")) == LinkFamily::Pcie);  // "optional NVLink bridge (pairs); PCIe Gen5 x16"
    CHECK(link_family(gpu("rtx-3090")) == LinkFamily::Pcie);   // a two-GPU bridge does not join a TP group of 4
    CHECK(link_family(gpu("mi300x")) == LinkFamily::Xgmi);
    CHECK(link_family(gpu("gaudi2")) == LinkFamily::Roce);
    CHECK(link_family(gpu("m2-ultra")) == LinkFamily::None);
}

TEST_CASE("formats as engines store them: int4 groups and MLC's q4f16_1 and EXL2 and a quantized head") {
    const ModelSpec m = preset("llama-2-7b");  // 32 layers, hidden 4,096, vocab 32,000: embedding and head 131,072,000 each
    const double embed = 32000.0 * 4096;
    const double linear = static_cast<double>(size_weights(m).params) - 2 * embed - 266240;  // less embedding, head and norms
    const double norms = 266240 * 2;
    auto bytes = [&](const WeightFormat& f) { return static_cast<double>(size_weights_in(m, f).bytes); };
    // int4:g32, a 16-bit scale per 32 weights: 4.5 bits for the linear layers; embedding and head 16-bit.
    CHECK(bytes(parse_weight_format("--weights-dtype", "int4:g32")) == Approx(linear * 4.5 / 8 + 2 * embed * 2 + norms).epsilon(1e-6));
    // gpt-fast's layout: a bf16 scale and zero per group (5 bits at g32) and the head quantized too.
    const WeightFormat gptfast = int4_as_stored(parse_weight_format("--weights-dtype", "int4:g32"), 32, true);
    CHECK(gptfast.bits_per_weight == 5.0);
    CHECK(bytes(gptfast) == Approx((linear + embed) * 5.0 / 8 + embed * 2 + norms).epsilon(1e-6));
    // q4f16_1: 4 bits and an fp16 scale per 32, every matrix (embedding and head too).
    CHECK(bytes(parse_weight_format("--weights-dtype", "q4f16_1")) == Approx((linear + 2 * embed) * 4.5 / 8 + norms).epsilon(1e-6));
    // exl2:4.0: 4 bits per linear weight on average, the head at 6 bits, the embedding 16-bit.
    CHECK(bytes(parse_weight_format("--weights-dtype", "exl2:4.0")) == Approx(linear * 4.0 / 8 + embed * 6 / 8 + embed * 2 + norms).epsilon(1e-6));
    CHECK_THROWS_WITH(parse_weight_format("--weights-dtype", "int4:g100"), Catch::Contains("int4:gN with a group of N = 32, 64, 128 or 256"));
    CHECK_THROWS_WITH(parse_weight_format("--weights-dtype", "exl2:1.5"), Catch::Contains("from 2 to 8"));
    CHECK_THROWS_AS(parse_weight_format("--weights-dtype", "exl2:4x"), Error);
}

TEST_CASE("fp8 W8A8 and W8A16, NVFP4 and MXFP4: their bytes and the math they run") {
    const ModelSpec m = preset("llama-2-7b");  // as above: embedding and head 131,072,000 weights each
    const double embed = 32000.0 * 4096;
    const double linear = static_cast<double>(size_weights(m).params) - 2 * embed - 266240;
    const double norms = 266240 * 2;
    auto bytes = [&](const char* f) { return static_cast<double>(size_weights_in(m, parse_weight_format("--weights-dtype", f)).bytes); };
    // NVFP4: 4 bits and an 8-bit E4M3 scale per 16 = 4.5 bits per linear weight; embedding and head 16-bit.
    CHECK(bytes("nvfp4") == Approx(linear * 4.5 / 8 + 2 * embed * 2 + norms).epsilon(1e-6));
    // MXFP4: 4 bits and an 8-bit E8M0 scale per 32 = 4.25 bits.
    CHECK(bytes("mxfp4") == Approx(linear * 4.25 / 8 + 2 * embed * 2 + norms).epsilon(1e-6));
    // Both fp8 variants store one byte per linear weight, as `fp8` does.
    CHECK(bytes("fp8:w8a16") == bytes("fp8"));
    CHECK(bytes("fp8:w8a8") == bytes("fp8"));

    // The math each runs, priced with the generic profile (16-bit fraction 0.65, fp8 0.45):
    Efficiency g;
    g.profile = find_engine("--engine", "generic");
    auto model = [&](const char* f, const char* device) {
        return make_cost_model(CostModelInputs{&m, gpu(device), parse_weight_format("--weights-dtype", f), std::nullopt, 1, g, std::nullopt});
    };
    // H100 SXM (bf16 989, fp8 1,979 dense TFLOP/s): W8A8 on fp8 tensor cores, W8A16 on bf16 ones.
    CHECK(model("fp8:w8a8", "h100-sxm").math_dtype == Dtype::Fp8);
    CHECK(model("fp8:w8a8", "h100-sxm").flops_per_s == Approx(0.45 * 1979e12));
    CHECK(model("fp8:w8a16", "h100-sxm").math_dtype == Dtype::Bf16);
    CHECK(model("fp8:w8a16", "h100-sxm").flops_per_s == Approx(0.65 * 989e12));
    // A100 has no fp8 tensor cores: W8A8 falls back to weight-only 16-bit math (vLLM's FP8 Marlin).
    CHECK(model("fp8:w8a8", "a100-sxm-80gb").math_dtype == Dtype::Bf16);
    CHECK(model("fp8:w8a8", "a100-sxm-80gb").flops_per_s == Approx(0.65 * 312e12));
    // NVFP4 on B200 (fp4 9,000 dense TFLOP/s) runs W4A4 at the low-precision fraction; on H100 it is
    // weight-only into bf16 GEMMs (FP4 Marlin).
    CHECK(model("nvfp4", "b200").math_dtype == Dtype::Fp4);
    CHECK(model("nvfp4", "b200").flops_per_s == Approx(0.45 * 9000e12));
    CHECK(model("nvfp4", "h100-sxm").math_dtype == Dtype::Bf16);
    CHECK(model("nvfp4", "h100-sxm").flops_per_s == Approx(0.65 * 989e12));
    // MXFP4 takes 16-bit activations everywhere.
    CHECK(model("mxfp4", "b200").math_dtype == Dtype::Bf16);
    CHECK_THROWS_WITH(parse_weight_format("--weights-dtype", "fp8:w4a8"), Catch::Contains("fp8:w8a16"));
}

TEST_CASE("a profile's per-layer cost and kernel factor and GEMM fall-off each in one step") {
    const ModelSpec m = preset("llama-3.1-8b");
    EngineProfile p;
    p.step_overhead_s = 0.001;
    p.layer_overhead_s = 10e-6;
    Efficiency e;
    e.profile = p;
    const CostModel c = make_cost_model(CostModelInputs{&m, ideal_gpu(), WeightFormat{}, std::nullopt, 1, e, std::nullopt});
    // 32 layers x 10 us on top of the 1 ms step.
    CHECK(decode_step(c, 1, 100).overhead_s == Approx(0.001 + 32 * 10e-6));

    // A GEMM half-saturated at 100 tokens: a 100-token prefill computes at half the FLOP/s, a 10,000-token one at 99%.
    EngineProfile q;
    q.prefill_half_tokens = 100;
    Efficiency eq = pure();
    eq.profile = q;
    const CostModel half = make_cost_model(CostModelInputs{&m, ideal_gpu(), WeightFormat{}, std::nullopt, 1, eq, std::nullopt});
    const CostModel flat = make_cost_model(CostModelInputs{&m, ideal_gpu(), WeightFormat{}, std::nullopt, 1, pure(), std::nullopt});
    CHECK(prefill_step(half, 1, 100).compute_s == Approx(2 * prefill_step(flat, 1, 100).compute_s));
    CHECK(prefill_step(half, 1, 10000).compute_s == Approx(1.01 * prefill_step(flat, 1, 10000).compute_s));

    // gpt-fast's int8 kernels at 0.841 of its 0.751 HBM stream: 0.632 of an A100's 2.039 TB/s.
    Efficiency g;
    g.profile = find_engine("--engine", "gpt-fast");
    const CostModel i8 =
        make_cost_model(CostModelInputs{&m, gpu("a100-sxm-80gb"), parse_weight_format("--weights-dtype", "int8"), std::nullopt, 1, g, std::nullopt});
    CHECK(i8.weights_bandwidth_bytes_per_s == Approx(g.profile.weights_hbm * g.profile.kernel("int8") * 2.039e12));
    CHECK(i8.engine == "gpt-fast");
}

TEST_CASE("the NIC table: line rates per GPU, and a bad entry names the file, the entry and the field") {
    // 400 Gb/s NDR = 50 GB/s per direction; 800 Gb/s XDR = 100 GB/s; 200 Gb/s HDR = 25 GB/s.
    CHECK(find_nic("ib-ndr").bytes_per_s == 50e9);
    CHECK(find_nic("ib-xdr").bytes_per_s == 100e9);
    CHECK(find_nic("ib-hdr").bytes_per_s == 25e9);
    for (const Nic& n : bundled_nics()) CHECK_FALSE(n.source.empty());
    const nlohmann::json good = {{"id", "x"}, {"name", "X"}, {"bytes_per_s_per_direction", 50e9}, {"source", "s"}};
    auto error_of = [](const nlohmann::json& entry) -> std::string {
        try {
            parse_nics(nlohmann::json{{"nics", nlohmann::json::array({entry})}}, "i.json");
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::Data);
            return e.what();
        }
        return "";
    };
    CHECK(error_of(good).empty());
    for (const nlohmann::json& bad : {nlohmann::json(1e308), nlohmann::json(-1), nlohmann::json(9.3e18), nlohmann::json("50e9"),
                                      nlohmann::json(nullptr), nlohmann::json::array({1})}) {
        nlohmann::json e = good;
        e["bytes_per_s_per_direction"] = bad;
        CHECK_THAT(error_of(e), Catch::Contains("i.json: nics[0].bytes_per_s_per_direction: expected"));
    }
    nlohmann::json no_source = good;
    no_source.erase("source");
    CHECK_THAT(error_of(no_source), Catch::Contains("nics[0].source"));
    nlohmann::json extra = good;
    extra["latency"] = 1;
    CHECK_THAT(error_of(extra), Catch::Contains("nics[0].latency"));
    CHECK_THROWS_WITH(parse_nics(nlohmann::json{{"nics", nlohmann::json::array({good, good})}}, "i.json"), Catch::Contains("found \"x\" twice"));
}
