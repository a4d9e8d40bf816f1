#include "cli/cmd_roofline.hpp"
#include "cli/flag_checks.hpp"

#include "core/speed/calibration.hpp"
#include "core/memory/capacity.hpp"
#include "core/model/config_parts.hpp"
#include "core/error.hpp"
#include "core/memory/kv_size.hpp"
#include "core/speed/roofline.hpp"
#include "io/model_loader.hpp"
#include "io/roofline_report.hpp"
#include "io/plot_files.hpp"

namespace kvplan {

void add_efficiency_options(CLI::App& app, EfficiencyOptions& o) {
    app.add_option("--bw-efficiency", o.bw_efficiency, "achievable fraction of datasheet bandwidth for weights and KV alike (default: KV 0.85; weights HBM 0.55, GDDR 0.88, LPDDR 0.80; docs/roofline.md)")
        ->check(finite_range(0.01, 1.0));
    app.add_option("--flops-efficiency", o.flops_efficiency, "achievable fraction of dense peak FLOP/s (default 0.65 for 16-bit math, 0.45 for fp8)")->check(finite_range(0.01, 1.0));
    app.add_option("--step-overhead-ms", o.step_overhead_ms, "fixed time per step: launches, scheduling, sampling (default 1.5)")
        ->check(finite_range(0.0, 1000.0));
    app.add_option("--calibration", o.calibration, "measured bandwidth and FLOP/s (the JSON `kvplan measure --output` writes) replace the fractions");
}

Efficiency resolve_efficiency(const EfficiencyOptions& o) {
    Efficiency e;
    if (o.bw_efficiency > 0) e.bandwidth_fraction = *(e.weights_bandwidth_fraction = o.bw_efficiency);
    if (o.flops_efficiency > 0) e.flops_fraction = o.flops_efficiency;
    if (o.step_overhead_ms >= 0) e.step_overhead_s = o.step_overhead_ms / 1e3;
    if (!o.calibration.empty()) e = apply_calibration(e, parse_calibration(read_json_file(o.calibration), o.calibration), o.calibration);
    return e;
}

CLI::App* setup_roofline(CLI::App& app, RooflineOptions& o) {
    CLI::App* cmd = app.add_subcommand("roofline", "decode step time, tokens/s and bound versus batch size; TTFT and end-to-end latency");
    add_model_options(*cmd, o.model);
    add_gpu_options(*cmd, o.gpu, GpuMemFlag::NotOffered);
    cmd->add_option("--tp", o.tp, "tensor-parallel ranks")->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
    cmd->add_option("-b,--batch", o.batches, "batch sizes, comma-separated (default 1,2,4,...,512)")
        ->delimiter(',')
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1'000'000}));
    cmd->add_option("-c,--context", o.context, "tokens cached per sequence during decode (default: prompt + output)")
        ->transform(token_count())->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--prompt", o.prompt, "prompt tokens, for TTFT (default 2048)")->transform(token_count())->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--output-tokens", o.output, "output tokens, for end-to-end latency (default 512)")->transform(token_count())->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    // The old spelling, kept for one release: --output will name an output file, as it does elsewhere.
    cmd->add_option("--output", o.output, "deprecated: use --output-tokens")->group("")->transform(token_count())->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--weights-dtype", o.weights_dtype, "auto|fp32|fp16|bf16|fp8|int8|int4|q8_0|q4_0|q4_k_m (auto: as the checkpoint)");
    cmd->add_option("--kv-dtype", o.kv_dtype, "auto|fp32|fp16|bf16|fp8|int8|int4");
    add_efficiency_options(*cmd, o.efficiency);
    cmd->add_option("--price-per-hour", o.price_per_hour, "USD per GPU-hour, for $ per million output tokens")->check(finite_range(0.0, 1e6));
    CLI::Option* json_flag = cmd->add_flag("--json", o.json, "print JSON (schema: docs/roofline.md)");
    cmd->add_option("--format", o.format, "table|json|markdown|csv")->check(CLI::IsMember({"table", "json", "markdown", "csv"}))->excludes(json_flag);  // one way to say it
    add_wide_flag(*cmd, o.wide);
    cmd->add_option("--plot", o.plot, "write step_time.svg (step time and its terms against batch) and its CSV into this folder");
    cmd->footer(
        "Examples:\n"
        "  kvplan roofline --model llama-3.1-8b --gpu h100-sxm --context 4096 --prompt 2048 --plot plots\n"
        "  kvplan roofline --model llama-3.1-70b --gpu h100-sxm --tp 4 --batch 1,8,64,256 --price-per-hour 2.5\n"
        "  kvplan roofline --model llama-3.1-8b --gpu rtx-4090 --weights-dtype q4_k_m --batch 1 --context 512   # llama.cpp");
    return cmd;
}

std::string run_roofline(const RooflineOptions& o) {
    RooflineResult r;
    ModelSpec model = resolve_model(o.model);
    r.model = &model;
    r.model_label = model_label(model);
    r.gpu = resolve_gpu(o.gpu);
    if (!r.gpu.from_database) usage_error("roofline needs the device's bandwidth and FLOP/s: pass --gpu ID (see `kvplan gpus`), not --gpu-mem");
    r.efficiency = resolve_efficiency(o.efficiency);
    const WeightFormat format = parse_weight_format("--weights-dtype", o.weights_dtype);
    const std::optional<Dtype> kv = parse_dtype_flag("--kv-dtype", o.kv_dtype);
    check_tp(model, o.tp);
    if (!o.plot.empty()) prepare_plot_dir(o.plot);
    r.cost = make_cost_model(CostModelInputs{&model, r.gpu, format, kv, o.tp, r.efficiency, std::nullopt});

    r.inputs.batches = o.batches.empty() ? std::vector<std::int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512} : o.batches;
    r.inputs.prompt = o.prompt;
    r.inputs.output = o.output;
    r.inputs.context = o.context > 0 ? o.context : o.prompt + o.output;
    if (o.price_per_hour > 0) r.inputs.price_per_hour = o.price_per_hour;

    // Which batches fit: the generic budget with the weights in this format.
    CapacityInputs cap;
    cap.gpu = r.gpu;
    cap.tp = o.tp;
    cap.contexts = {r.inputs.context};
    cap.kv_dtype = kv;
    if (!format.as_checkpoint) cap.weights_bytes = static_cast<std::int64_t>(r.cost.weight_bytes_total / static_cast<double>(o.tp)) + 1;
    r.inputs.max_batch = plan_capacity(model, cap).rows.at(0).max_requests;

    r.roofline = make_roofline(r.cost, r.inputs);
    r.weights_label = format.as_checkpoint ? (model.quantization.method == QuantMethod::None ? std::string(dtype_name(serving_dtype(model.checkpoint_dtype)))
                                                                                            : std::string(quant_method_name(model.quantization.method)))
                                           : format.name;
    if (!o.plot.empty()) write_plot_files(o.plot, render_roofline_plots(r));
    const std::string f = o.json ? "json" : o.format;
    if (f == "json") return render_roofline_json(r);
    if (f == "markdown") return render_roofline_markdown(r);
    if (f == "csv") return render_roofline_csv(r);
    return render_roofline_table(r, o.wide ? Width::Wide : Width::Fit);
}

}  // namespace kvplan
