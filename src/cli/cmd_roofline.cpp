#include "cli/cmd_roofline.hpp"

#include "cli/flag_checks.hpp"
#include "cli/scale_out_options.hpp"
#include "cli/spec_options.hpp"
#include "core/error.hpp"
#include "core/memory/capacity.hpp"
#include "core/memory/kv_size.hpp"
#include "core/memory/parallel.hpp"
#include "core/model/config_parts.hpp"
#include "core/model/weights.hpp"
#include "core/speed/calibration.hpp"
#include "core/speed/roofline.hpp"
#include "core/speed/speculative.hpp"
#include "io/engine_db.hpp"
#include "io/file_writer.hpp"
#include "io/model_loader.hpp"
#include "report/html_report.hpp"
#include "report/plot_files.hpp"
#include "report/roofline_report.hpp"

namespace kvplan {

void add_efficiency_options(CLI::App& app, EfficiencyOptions& o) {
    app.add_option("--bw-efficiency", o.bw_efficiency,
                   "achievable fraction of datasheet bandwidth for weights and KV alike (default: KV 0.85; weights HBM 0.55, GDDR 0.88, LPDDR 0.80; "
                   "docs/roofline.md)")
        ->check(bounded_flag(Quantity::EfficiencyFraction));
    app.add_option("--flops-efficiency", o.flops_efficiency, "achievable fraction of dense peak FLOP/s (default 0.65 for 16-bit math, 0.45 for fp8)")
        ->check(bounded_flag(Quantity::EfficiencyFraction));
    app.add_option("--step-overhead-ms", o.step_overhead_ms, "fixed time per step: launches, scheduling, sampling (default 1.5)")
        ->check(finite_range(0.0, 1000.0));
    app.add_option("--calibration", o.calibration, "measured bandwidth and FLOP/s (the JSON `kvplan measure --output` writes) replace the fractions");
}

Efficiency resolve_efficiency(const EfficiencyOptions& o, const std::string& engine) {
    Efficiency e;
    e.profile = find_engine("--engine", engine);
    if (o.bw_efficiency > 0) e.bandwidth_fraction = *(e.weights_bandwidth_fraction = o.bw_efficiency);
    if (o.flops_efficiency > 0) e.flops_fraction = o.flops_efficiency;
    if (o.step_overhead_ms >= 0) e.step_overhead_s = o.step_overhead_ms / 1e3;
    if (!o.calibration.empty())
        e = apply_calibration(e, parse_calibration(read_json_file(o.calibration, kMaxConfigBytes, nullptr, JsonKeys::Unique), o.calibration),
                              o.calibration);
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
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--prompt", o.prompt, "prompt tokens, for TTFT (default 2048)")
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--output-tokens", o.output, "output tokens, for end-to-end latency (default 512)")
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    // The old spelling, kept for one release: --output will name an output file, as it does elsewhere.
    cmd->add_option("--output", o.output, "deprecated: use --output-tokens")
        ->group("")
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--weights-dtype", o.weights_dtype,
                    "auto|fp32|fp16|bf16|fp8[:w8a8|:w8a16]|int8|int4[:gN]|nvfp4|mxfp4|q8_0|q4_0|q4_k_m|q4f16_1|exl2:B (auto: as the checkpoint)");
    cmd->add_option("--kv-dtype", o.kv_dtype, "auto|fp32|fp16|bf16|fp8|int8|int4");
    add_efficiency_options(*cmd, o.efficiency);
    cmd->add_option("--engine", o.engine, "speed profile: generic, vllm, sglang, trtllm, llamacpp, gpt-fast, mlc, exllamav2 (`kvplan engines`)");
    cmd->add_option("--price-per-hour", o.price_per_hour, "USD per GPU-hour, for $ per million output tokens")->check(finite_range(0.0, 1e6));
    CLI::Option* json_flag = cmd->add_flag("--json", o.json, "print JSON (schema: docs/roofline.md)");
    cmd->add_option("--format", o.format, "table|json|markdown|csv")
        ->check(CLI::IsMember({"table", "json", "markdown", "csv"}))
        ->excludes(json_flag);  // one way to say it
    add_wide_flag(*cmd, o.wide);
    cmd->add_option("--plot", o.plot,
                    "write step_time.svg (step time and its terms against batch) and pareto.svg (tokens/s per GPU "
                    "against per user), each with its CSV, into this folder");
    cmd->add_option("--report", o.report, "write one self-contained HTML file: the printed output and both charts inline");
    cmd->add_option("--spec-method", o.spec_method, "speculative decoding: mtp|eagle|draft, priced next to plain decode (docs/roofline.md)")
        ->check(CLI::IsMember({"mtp", "eagle", "draft"}));
    cmd->add_option("--spec-tokens", o.spec_tokens, "draft tokens per step, K (vLLM's num_speculative_tokens), 1..16")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{16}));
    cmd->add_option("--acceptance", o.acceptance, "acceptance rate in [0,1] for every draft position, or K comma-separated conditional rates a1..aK");
    cmd->add_option("--draft-model", o.draft_model, "the draft model for --spec-method draft (a config.json, a model folder or a preset)");
    add_scale_out_options(*cmd, o, "attention data-parallel ranks; --batch is then the replica's, B / dp per rank (docs/scale-out.md)");
    cmd->add_option("--expert-imbalance", o.expert_imbalance, "busiest EP rank's routed tokens over the mean, >= 1 (default 1: uniform routing)");
    cmd->add_flag(
        "--two-batch-overlap", o.two_batch_overlap,
        "EP layouts: two micro-batches, one's compute hiding the other's all-to-all (vLLM --enable-dbo, SGLang --enable-two-batch-overlap)");
    add_node_options(*cmd, o.nodes);
    cmd->footer(
        "Examples:\n"
        "  kvplan roofline --model llama-3.1-8b --gpu h100-sxm --context 4096 --prompt 2048 --plot plots\n"
        "  kvplan roofline --model llama-3.1-70b --gpu h100-sxm --tp 4 --batch 1,8,64,256 --price-per-hour 2.5\n"
        "  kvplan roofline --model llama-3.1-8b --gpu rtx-4090 --engine llamacpp --weights-dtype q4_k_m --batch 1 --context 512\n"
        "  kvplan roofline --model llama-3.1-8b --gpu h100-sxm --spec-method eagle --spec-tokens 3 --acceptance 0.8,0.7,0.6\n"
        "  kvplan roofline --model llama-3.1-70b --gpu h100-sxm --tp 4 --spec-method draft --draft-model llama-3.1-8b --spec-tokens 4 --acceptance "
        "0.7\n"
        "  kvplan roofline --model deepseek-v3 --gpu h200 --engine vllm --dp 8 --enable-expert-parallel \\\n"
        "      --batch 64,512 --expert-imbalance 1.2   # docs/scale-out.md, \"Step cost\"\n"
        "  kvplan roofline --model deepseek-v3 --gpu h800 --engine sglang --tp 144 --dp 144 --ep 144 \\\n"
        "      --moe-a2a-backend deepep --redundant-experts 32 --nodes 18 --batch 18432   # \"Nodes and NICs\"\n"
        "  kvplan roofline --model deepseek-v3 --gpu h200 --engine sglang --tp 8 --dp 8 --ep 8 --batch 64,2048 \\\n"
        "      --two-batch-overlap --spec-method mtp --spec-tokens 1 --acceptance 0.85   # \"Two-batch overlap\"");
    return cmd;
}

void use_engine_kv_default(ModelSpec& model, const Efficiency& efficiency) {
    if (efficiency.profile.kv_cache_dtype && !model.engine_kv_dtype) model.engine_kv_dtype = efficiency.profile.kv_cache_dtype;
}

std::string run_roofline(const RooflineOptions& o) {
    RooflineResult r;
    ModelSpec model = resolve_model(o.model);
    r.model = &model;
    r.model_label = model_label(model);
    r.gpu = resolve_gpu(o.gpu);
    if (!r.gpu.from_database) usage_error("roofline needs the device's bandwidth and FLOP/s: pass --gpu ID (see `kvplan gpus`), not --gpu-mem");
    r.efficiency = resolve_efficiency(o.efficiency, o.engine);
    use_engine_kv_default(model, r.efficiency);
    const WeightFormat format = parse_weight_format("--weights-dtype", o.weights_dtype);
    const std::optional<Dtype> kv = parse_dtype_flag("--kv-dtype", o.kv_dtype);
    // DP attention + EP: the layout rules `concurrency` uses (core/memory/parallel.cpp).
    const std::optional<ScaleOutInputs> scale_in = scale_out_from_flags(layout_flags(o), scale_out_rules(o.engine));
    if (o.expert_imbalance != 0) check_expert_imbalance(o.expert_imbalance);
    std::optional<ExpertLayoutInputs> layout;
    std::int64_t attention_tp = o.tp;
    if (scale_in) {
        const ScaleOut so = plan_scale_out(model, *scale_in);
        if (so.dp > 1 || so.ep > 1) {
            layout = ExpertLayoutInputs{so, o.expert_imbalance != 0 ? o.expert_imbalance : 1.0, bundled_all_to_all_latencies(),
                                        resolve_gpus_per_node(o.nodes, so.gpus, default_gpus_per_node(r.gpu.interconnect)), find_nic(o.nodes.nic)};
            attention_tp = so.attention_tp;
            const WeightSizing w = size_weights_in(model, format);
            r.weights_per_gpu_bytes =
                stage_weights_scaled(w, model, pipeline_stages(static_cast<std::int64_t>(model.layers.size()), 1).at(0), 1, so).total_bytes;
        }
    }
    if ((o.nodes.nodes > 0 || o.nodes.gpus_per_node > 0 || o.nodes.nic != "ib-ndr") && !layout)
        usage_error("--nodes, --gpus-per-node and --nic place a DP attention + EP layout: add --dp or --ep");
    if (o.expert_imbalance != 0 && (!layout || layout->scale_out.ep < 2))
        usage_error("--expert-imbalance needs expert parallelism (--ep N, or --enable-expert-parallel with --dp)");
    if (o.two_batch_overlap) add_two_batch_overlap(layout ? &*layout : nullptr, o.engine);
    check_tp(model, attention_tp);
    if (!o.plot.empty()) prepare_plot_dir(o.plot);
    if (!o.report.empty()) check_writable(o.report);
    const CostModelInputs cost_in{&model, r.gpu, format, kv, attention_tp, r.efficiency, std::nullopt};
    r.cost = layout ? make_cost_model(cost_in, *layout) : make_cost_model(cost_in);

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
    if (!format.as_checkpoint && !layout) cap.weights_bytes = static_cast<std::int64_t>(r.cost.weight_bytes_total / static_cast<double>(o.tp)) + 1;
    if (layout) {
        // Every DP rank its own KV pool: the replica holds max_requests x DP.
        cap.scale_out = scale_in;
        if (!format.as_checkpoint) cap.weights_bytes = r.weights_per_gpu_bytes;
        r.inputs.max_batch = plan_capacity(model, cap).rows.at(0).max_requests_replica;
    } else {
        r.inputs.max_batch = plan_capacity(model, cap).rows.at(0).max_requests;
    }

    // Speculative decoding under a layout: the MTP or EAGLE head split and stepped as the target's layers are.
    const CostModelInputs target{&model, r.gpu, format, kv, attention_tp, r.efficiency, std::nullopt};
    ModelSpec draft_spec;
    r.inputs.spec =
        resolve_spec(SpecFlags{o.spec_method, o.spec_tokens, o.acceptance, o.draft_model}, model, target, draft_spec, layout ? &*layout : nullptr);
    if (r.inputs.spec && r.inputs.spec->method == SpecMethod::Draft) r.inputs.spec->draft_label = model_label(draft_spec);

    r.roofline = make_roofline(r.cost, r.inputs);
    r.weights_label = format.as_checkpoint
                          ? (model.quantization.method == QuantMethod::None ? std::string(dtype_name(serving_dtype(model.checkpoint_dtype)))
                                                                            : std::string(quant_method_name(model.quantization.method)))
                          : format.name;
    if (!o.plot.empty()) write_plot_files(o.plot, render_roofline_plots(r));
    const std::string f = o.json ? "json" : o.format;
    const std::string text = f == "json"       ? render_roofline_json(r)
                             : f == "markdown" ? render_roofline_markdown(r)
                             : f == "csv"      ? render_roofline_csv(r)
                                               : render_roofline_table(r, o.wide ? Width::Wide : Width::Fit);
    if (!o.report.empty()) write_file_atomically(o.report, render_html_report(roofline_report_title(r), text, render_roofline_plots(r)));
    return text;
}

}  // namespace kvplan
