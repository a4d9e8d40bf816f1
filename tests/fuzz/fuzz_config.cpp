// libFuzzer target: the config path `kvplan size` and `concurrency` take,
// and the engine profile path of --engine-file.
// Bytes -> JSON -> ModelSpec -> KV sizing, parameter and weight counts,
// capacity plans for three engines on two GPUs, and a roofline step. A
// kvplan::Error is the expected answer to bad input; anything else (a crash,
// a sanitizer report, another exception) is a bug. Build and run: `make fuzz`.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "core/memory/capacity.hpp"
#include "core/memory/kv_size.hpp"
#include "core/model/config_parser.hpp"
#include "core/model/weights.hpp"
#include "core/speed/step_cost.hpp"
#include "io/engine_db.hpp"
#include "io/gpu_db.hpp"
#include "io/model_loader.hpp"

using namespace kvplan;

namespace {

void plan(const ModelSpec& spec, const Gpu& gpu, Engine engine, std::int64_t tp, std::optional<ScaleOutInputs> scale_out = std::nullopt) {
    CapacityInputs in;
    in.gpu = gpu;
    in.engine = engine;
    in.tp = tp;
    in.scale_out = scale_out;
    in.contexts = {1024, 32768};
    try {
        const CapacityPlan p = plan_capacity(spec, in);
        (void)p;
    } catch (const Error&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 256 * 1024) return -1;  // configs are a few KB; keep executions fast
    const std::string text(reinterpret_cast<const char*>(data), size);
    // The same bytes as an engine profile (--engine-file), priced on a bundled model when they parse.
    try {
        Efficiency e;
        e.profile = parse_engine_profile(parse_json_text(text, "fuzz.json"), "fuzz.json");
        e.profile.links = bundled_link_latencies();
        static const ModelSpec llama = load_model("llama-3.1-8b");
        static const Gpu h100_sxm = find_gpu(bundled_gpus(), "h100-sxm");
        const CostModel cm = make_cost_model(CostModelInputs{&llama, h100_sxm, WeightFormat{}, std::nullopt, 2, e, std::nullopt});
        (void)decode_step(cm, 8, 4096);
        (void)prefill_step(cm, 1, 512);
    } catch (const Error&) {
    }
    ModelSpec spec;
    try {
        spec = parse_model_config(parse_json_text(text, "fuzz.json"), "fuzz.json");
    } catch (const Error&) {
        return 0;
    }
    for (std::int64_t tp : {1, 2}) {
        try {
            KvOptions o;
            o.context = 4096;
            o.batch = 8;
            o.tp = tp;
            (void)size_kv(spec, o);
        } catch (const Error&) {
        }
    }
    try {
        (void)size_weights(spec);
        (void)size_weights(spec, Dtype::Fp8);
    } catch (const Error&) {
    }
    static const Gpu h100 = find_gpu(bundled_gpus(), "h100-sxm");
    static const Gpu l4 = find_gpu(bundled_gpus(), "l4");
    plan(spec, h100, Engine::Vllm, 1);
    plan(spec, h100, Engine::Generic, 2);
    plan(spec, l4, Engine::Sglang, 1);
    plan(spec, l4, Engine::Trtllm, 1);
    // Data-parallel attention with expert parallelism, each engine's rules
    // (docs/scale-out.md): vLLM DP 4 x TP 2 with --enable-expert-parallel and
    // EPLB's redundant experts; SGLang TP 8, DP 4, EP 8, and deepep.
    ScaleOutInputs vllm_ep{ScaleOutRules::Vllm, 2, 4, 0, true, static_cast<std::int64_t>(size % 3) * 8, 0, false};
    plan(spec, h100, Engine::Vllm, 2, vllm_ep);
    ScaleOutInputs sglang_ep{ScaleOutRules::Sglang, 8, 4, 8, false, 0, size % 2 == 0 ? 0 : 1, size % 4 == 1};
    plan(spec, h100, Engine::Sglang, 8, sglang_ep);
    try {
        const CostModel cm = make_cost_model(CostModelInputs{&spec, h100, WeightFormat{}, std::nullopt, 1, Efficiency{}, std::nullopt});
        (void)decode_step(cm, 8, 4096);
        (void)prefill_step(cm, 1, 512);
    } catch (const Error&) {
    }
    return 0;
}
