#include "cli/cmd_baseline.hpp"

#include <filesystem>

#include "cli/flag_checks.hpp"
#include "cli/model_options.hpp"
#include "cli/version.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/gate/baseline.hpp"
#include "core/gate/regression.hpp"
#include "core/gate/scenario.hpp"
#include "core/memory/capacity.hpp"
#include "core/memory/engine.hpp"
#include "core/model/config_parts.hpp"
#include "core/speed/calibration.hpp"
#include "io/baseline_file.hpp"
#include "io/engine_db.hpp"
#include "io/file_writer.hpp"
#include "io/gpu_db.hpp"
#include "io/model_loader.hpp"
#include "io/presets.hpp"
#include "report/printable.hpp"

namespace kvplan {

CLI::App* setup_baseline(CLI::App& app, BaselineOptions& o) {
    CLI::App* cmd = app.add_subcommand("baseline", "write a baseline for `kvplan check`: one scenario per model x GPU x context");
    cmd->add_option("-m,--model", o.models, "models (preset, config.json, folder or Hugging Face id); repeat or comma-separate")
        ->required()
        ->delimiter(',');
    cmd->add_option("--gpu", o.gpus, "GPU ids from `kvplan gpus`; repeat or comma-separate")->required()->delimiter(',');
    cmd->add_option("-c,--context", o.contexts, "tokens per request, comma-separated")
        ->required()
        ->delimiter(',')
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--tp", o.tp, "tensor-parallel degree, or auto: the smallest power of two whose GPUs hold the longest context");
    cmd->add_option("--pp", o.pp, "pipeline-parallel stages")->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
    cmd->add_option("--engine", o.engine, "generic|vllm|vllm-v0|sglang|trtllm");
    cmd->add_option("--kv-dtype", o.kv_dtype, "auto|fp32|fp16|bf16|fp8|int8|int4");
    cmd->add_option("--mem-util", o.mem_util, "memory fraction (default: the engine's)")->check(finite_range(0.01, 1.0));
    cmd->add_option("-b,--batch", o.batch, "also gate decode step time and tokens/s at this batch")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1'000'000}));
    cmd->add_option("--weights-dtype", o.weights_dtype,
                    "auto|fp32|fp16|bf16|fp8|int8|int4: serve unquantized weights in this dtype (a lower one leaves embeddings and head at 16 bits)");
    cmd->add_option("--max-model-len", o.max_model_len, "the engine's max_model_len (default: max_position_embeddings)")
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--max-num-seqs", o.max_num_seqs, "sequences the sampler is sized for (default: the engine's)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1'000'000}));
    cmd->add_option("--max-num-batched-tokens", o.max_batched_tokens, "tokens per forward pass (default: the engine's)")
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--block-size", o.block_size, "tokens per KV block (default: the engine's)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1'000'000}));
    cmd->add_option("--calibration", o.calibration,
                    "with --batch: decode figures from this `kvplan measure --output` file's measured bandwidth and FLOP/s");
    cmd->add_option("--tolerance", o.tolerance,
                    "the baseline's default tolerance, e.g. 0.5%, and figures' own: 0.5%,decode_step_s=2% (default 0%; the decode "
                    "figures at least 5% unless named)");
    cmd->add_option("-o,--output", o.output, "write the baseline to FILE (atomically); config paths are made relative to FILE's folder");
    cmd->footer(
        "Examples:\n"
        "  kvplan baseline --model llama-3.1-8b --gpu h100-sxm --context 4096,32768 --output capacity.json\n"
        "  kvplan baseline --model configs/our-model/config.json --gpu h100-sxm,a100-80gb --context 8192 \\\n"
        "      --engine vllm --kv-dtype fp8 --batch 32 --tolerance 0.5% --output capacity.json\n"
        "  kvplan baseline --model llama-3.1-70b --gpu a100-80gb --tp auto --context 4096 > capacity.json");
    return cmd;
}

namespace {

// The short name a scenario starts with: a preset's name, a config's folder
// ("configs/our-model/config.json" -> "our-model") or file stem.
std::string model_short_name(const std::string& argument) {
    if (auto preset = find_preset(argument)) return preset->name;
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path p(argument);
    if (fs::exists(p, ec)) {
        p = fs::absolute(p).lexically_normal();
        if (p.filename().empty()) p = p.parent_path();
        if (p.filename() == "config.json") return p.parent_path().filename().string();
        if (fs::is_directory(p, ec)) return p.filename().string();
        return p.stem().string();
    }
    return argument;  // a Hugging Face id
}

std::int64_t parse_tp(const std::string& text) {
    if (text == "auto") return 0;
    try {
        std::size_t used = 0;
        const long long v = std::stoll(text, &used);
        if (used == text.size() && v >= 1 && v <= 4096) return v;
    } catch (const std::exception&) {
    }
    usage_error("--tp " + text + ": expected a degree from 1 to 4096, or auto");
}

}  // namespace

std::string run_baseline(const BaselineOptions& o, std::ostream& err) {
    if (!o.output.empty()) check_writable(o.output);
    const std::int64_t tp_flag = parse_tp(o.tp);
    parse_engine(o.engine);
    parse_dtype_flag("--kv-dtype", o.kv_dtype);
    parse_dtype_flag("--weights-dtype", o.weights_dtype);
    std::optional<std::int64_t> tolerance;  // written only when given, as each figure's own
    Tolerances given{-1, {}};               // -1: no default among the items
    if (!o.tolerance.empty()) given = parse_tolerances("--tolerance", o.tolerance, given);
    if (given.default_ppb >= 0) tolerance = given.default_ppb;
    if (o.batch > 0 && o.pp > 1) usage_error("--batch: decode figures model tensor parallelism only; use --pp 1");
    Efficiency efficiency;
    efficiency.profile.all_to_all = bundled_all_to_all_latencies();  // as `check` prices a DP + EP layout's decode step
    efficiency.profile.nics = bundled_nics();                        // a layout over several nodes
    efficiency.profile.links = bundled_link_latencies();             // and its all-gathers, as roofline prices them
    efficiency.profile.collectives = bundled_collectives();
    if (!o.calibration.empty()) {
        if (o.batch == 0) usage_error("--calibration calibrates the decode figures: give --batch too");
        efficiency = apply_calibration(
            efficiency, parse_calibration(read_json_file(o.calibration, kMaxConfigBytes, nullptr, JsonKeys::Unique), o.calibration), o.calibration);
    }

    std::vector<Scenario> scenarios;
    Provenance provenance{{version(), build_commit()}, {}};
    std::vector<std::string> notes;  // printed only when the baseline is written: an error stays one line
    for (const std::string& model_arg : o.models) {
        const ModelSpec model = load_model(model_arg);
        const std::string short_name = model_short_name(model_arg);
        const std::string reference = o.output.empty() ? model_arg : model_reference_for(model_arg, o.output);
        // vLLM refuses a request longer than max_model_len, which defaults to
        // max_position_embeddings: no scenario to gate.
        const std::int64_t limit = o.max_model_len > 0 ? o.max_model_len : model.max_position_tokens;
        const char* limit_name = o.max_model_len > 0 ? "--max-model-len" : "max_position_embeddings";
        std::vector<std::int64_t> contexts;
        for (std::int64_t c : o.contexts) {
            if (limit > 0 && c > limit)
                notes.push_back(short_name + ": skipped context " + std::to_string(c) + ", beyond its " + limit_name + " (" + std::to_string(limit) +
                                ")");
            else contexts.push_back(c);
        }
        if (contexts.empty()) continue;
        provenance.models[reference] = provenance_of(model.source);
        for (const std::string& gpu_id : o.gpus) {
            const Gpu& gpu = find_gpu(known_gpus(), gpu_id);

            ScenarioInputs base;
            base.model = reference;
            base.gpu = gpu.id;
            base.engine = o.engine;
            base.pp = o.pp;
            base.kv_dtype = o.kv_dtype;
            if (o.mem_util > 0) base.mem_util = o.mem_util;
            if (o.batch > 0) base.batch = o.batch;
            base.weights_dtype = o.weights_dtype;
            if (!o.calibration.empty()) base.calibration = o.output.empty() ? o.calibration : model_reference_for(o.calibration, o.output);
            if (o.max_model_len > 0) base.max_model_len = o.max_model_len;
            if (o.max_num_seqs > 0) base.max_num_seqs = o.max_num_seqs;
            if (o.max_batched_tokens > 0) base.max_num_batched_tokens = o.max_batched_tokens;
            if (o.block_size > 0) base.block_size = o.block_size;
            base.tp = tp_flag;
            if (tp_flag == 0) {
                // auto: plan the longest context at TP 1; when it does not fit, take the smallest TP that does.
                ScenarioInputs longest = base;
                longest.tp = 1;
                longest.context_tokens = *std::max_element(contexts.begin(), contexts.end());
                const CapacityPlan plan = plan_capacity(model, scenario_capacity_inputs(gpu, longest, efficiency.profile));
                if (plan.fits) base.tp = 1;
                else if (plan.smallest_tp) base.tp = *plan.smallest_tp;
                else {
                    notes.push_back(short_name + " on " + gpu.id + ": skipped, no tensor-parallel degree up to 64 holds a request of " +
                                    std::to_string(longest.context_tokens) + " tokens");
                    continue;
                }
            }
            for (std::int64_t c : contexts) {
                Scenario s;
                s.inputs = base;
                s.inputs.context_tokens = c;
                s.name = short_name + "/" + gpu.id + "/tp" + std::to_string(s.inputs.tp);
                if (o.pp > 1) s.name += "/pp" + std::to_string(o.pp);
                if (o.engine != "generic") s.name += "/" + o.engine;
                if (o.kv_dtype != "auto") s.name += "/kv-" + o.kv_dtype;
                s.name += "/" + std::to_string(c);
                s.expected = evaluate_scenario(model, gpu, s.inputs, efficiency).figures;
                scenarios.push_back(std::move(s));
            }
        }
    }
    if (scenarios.empty()) {
        std::string why;
        for (const std::string& n : notes) why += (why.empty() ? "" : "; ") + n;
        usage_error("no scenario left to write (" + why + ")");
    }
    for (std::size_t i = 0; i < scenarios.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (scenarios[i].name == scenarios[j].name) usage_error("scenario \"" + scenarios[i].name + "\" given twice (a model or GPU repeated?)");

    const std::string text = baseline_text(baseline_json(scenarios, tolerance, provenance, given.named));
    if (!o.output.empty()) write_file_atomically(o.output, text);
    for (const std::string& n : notes) err << "kvplan: note: " << printable(n) << "\n";
    if (o.output.empty()) return text;
    return "wrote " + o.output + ": " + std::to_string(scenarios.size()) + " scenario" + (scenarios.size() == 1 ? "" : "s") + "\n";
}

}  // namespace kvplan
