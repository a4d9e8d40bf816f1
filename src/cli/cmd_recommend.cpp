#include "cli/cmd_recommend.hpp"

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "cli/flag_checks.hpp"
#include "cli/progress.hpp"
#include "cli/recommend_search.hpp"
#include "core/error.hpp"
#include "core/model/config_parts.hpp"
#include "io/engine_db.hpp"
#include "io/gpu_db.hpp"
#include "io/model_loader.hpp"
#include "io/price_file.hpp"
#include "report/recommend_report.hpp"

namespace kvplan {

CLI::App* setup_recommend(CLI::App& app, RecommendOptions& o) {
    CLI::App* cmd = app.add_subcommand("recommend", "the GPU, TP x DP and batch that meet TTFT and TPOT targets, best first, with engine commands");
    add_model_options(*cmd, o.model);
    cmd->add_option("-c,--context", o.context, "analytic: the longest request in tokens (max_model_len)")
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{2}, kMaxTokens));
    cmd->add_option("--prompt", o.prompt, "prompt tokens for TTFT (default: context - output)")
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--output-tokens", o.output, "output tokens per request (default 256)")
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    // The old spelling, kept for one release: --output will name an output file, as it does elsewhere.
    cmd->add_option("--output", o.output, "deprecated: use --output-tokens")
        ->group("")
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--ttft", o.ttft, "analytic: time-to-first-token target, seconds")->check(finite_range(1e-6, 3600.0));
    cmd->add_option("--tpot", o.tpot, "analytic: time-per-output-token target, seconds")->check(finite_range(1e-6, 60.0));
    cmd->add_option("--gpus", o.gpus, "devices to consider: comma-separated ids, or all (default)");
    cmd->add_option("--max-gpus", o.max_gpus, "most GPUs per replica: TP 1, 2, 4, 8 (and, with --slo, TP x PP 2 or 4)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{8}));
    cmd->add_option("--max-nodes", o.max_nodes,
                    "mixture-of-experts models: DP attention + EP layouts over 2, 4, 8 or 16 nodes up to this (default 1)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{16}));
    cmd->add_option("--gpus-per-node", o.gpus_per_node,
                    "with --max-nodes: GPUs on one scale-up link (default: 8 in an HGX node, 72 in an NVL72 rack)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{72}));
    cmd->add_option("--nic", o.nic, "with --max-nodes: the NIC per GPU between nodes: ib-hdr, ib-ndr (default), ib-xdr, roce-400, efa-p5");
    add_spec_options(*cmd, o.spec, "search, vLLM: every candidate verifies K drafts a decode step (docs/recommend.md)");
    cmd->add_flag(
        "--two-batch-overlap", o.two_batch_overlap,
        "search: run the DP + EP layouts as two micro-batches hiding the all-to-all (vLLM --enable-dbo, SGLang --enable-two-batch-overlap)");
    cmd->add_option("--num-gpus", o.num_gpus, "GPUs to fill: TP x DP = N, data-parallel replicas of the smallest TP that meets the targets")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
    cmd->add_option("--price-per-hour", o.prices, "USD per GPU-hour per device, e.g. h100-sxm=2.5,a100-80gb=1.6: rank by cost");
    cmd->add_option("--price-file", o.price_file, "JSON file of USD per GPU-hour per device (docs/recommend.md); --price-per-hour overrides it");
    cmd->add_option("--weights-dtype", o.weights_dtype,
                    "auto|fp32|fp16|bf16|fp8[:w8a8|:w8a16]|int8|int4[:gN]|nvfp4|mxfp4|q8_0|q4_0|q4_k_m|q4f16_1|exl2:B (--slo: a list, each tried)");
    cmd->add_option("--kv-dtype", o.kv_dtype, "auto|fp32|fp16|bf16|fp8|int8|int4 (--slo: a list such as auto,fp8, each tried)");
    add_efficiency_options(*cmd, o.efficiency);
    cmd->add_option("--top", o.top, "candidates to print (default 5)")->check(CLI::Range(std::int64_t{1}, std::int64_t{1000}));
    CLI::Option* json_flag = cmd->add_flag("--json", o.json, "print JSON (schema: docs/roofline.md)");
    cmd->add_option("--format", o.format, "table|json|markdown|csv")
        ->check(CLI::IsMember({"table", "json", "markdown", "csv"}))
        ->excludes(json_flag);  // one way to say it
    cmd->add_flag("--wide", o.wide, "table: every column, every rejected configuration, commands on one line (wider than 100 columns)");
    // The SLO search (docs/recommend.md).
    cmd->add_flag("--analytic", o.analytic, "the steady-batch search (--context --ttft --tpot), also the mode when no workload is given");
    cmd->add_option("--slo", o.slo, "search: targets every request must meet, e.g. ttft=2s,tpot=50ms[,e2e=30s]");
    cmd->add_option("--goodput", o.goodput, "search: the share of requests that must meet every --slo target, in (0, 1] (default 0.99)");
    cmd->add_option("--draws", o.draws,
                    "search: independent draws of the traffic each rate is confirmed on, in runs of at least 10 minutes "
                    "(default 3; 0: the 2,000-request search alone, no stability test)")
        ->check(CLI::Range(std::int64_t{0}, std::int64_t{5}));
    cmd->add_flag("--optimistic", o.optimistic, "search: size fleets on the step model's nominal rate, not the slow end of its band");
    cmd->add_option("--engine", o.engine,
                    "vllm|sglang: whose speed profile prices steps and, with --slo, whose scheduler the simulator runs (default vllm)")
        ->check(CLI::IsMember({"vllm", "sglang"}));
    cmd->add_option("--rate", o.rate,
                    "search: the traffic to serve, requests per second (Poisson arrivals); with --trace, the trace's arrivals "
                    "rescaled to this mean rate (its bursts and lengths kept)")
        ->check(finite_range(1e-9, 1e9));
    cmd->add_option("--input-len", o.input_len,
                    "search: prompt lengths, fixed:N, uniform:A-B, lognormal:MEAN,SIGMA or from:TRACE (default fixed:1024)");
    cmd->add_option("--output-len", o.output_len, "search: output lengths, the same forms (default fixed:128)");
    cmd->add_option("--requests", o.requests, "search: requests per simulated run (default 2000; a trace: at most 4000 of it, every k-th)")
        ->check(CLI::Range(std::int64_t{10}, std::int64_t{1'000'000}));
    cmd->add_option("--seed", o.seed, "search: random seed of the synthetic traffic")->check(seed_value());
    cmd->add_option("--trace", o.trace, "search: the traffic to serve, a trace file or a bundled one (azure-2023-conv, azure-2023-code)");
    cmd->add_option("--trace-format", o.trace_format, "auto|azure|mooncake|jsonl|csv|timestamps|vllm-bench (docs/compare.md)")
        ->check(CLI::IsMember({"auto", "azure", "mooncake", "jsonl", "csv", "timestamps", "vllm-bench"}));
    cmd->add_option("--time-scale", o.time_scale, "search: the trace's traffic this many times faster (its peak minute is the target)")
        ->check(finite_range(1e-6, 1e6));
    cmd->add_option("--limit", o.limit, "search: only the first N requests of the trace")
        ->check(CLI::Range(std::int64_t{2}, std::int64_t{100'000'000}));
    cmd->add_option("--pp", o.pp,
                    "search: pipeline stages to try, auto (2 and 4 where vLLM advises pipelines: PCIe devices, or the heads "
                    "cap TP) or a list such as 1,2,4 (every device); TP x PP within --max-gpus");
    cmd->add_flag("--disaggregated", o.disaggregated,
                  "search: also disaggregated prefill/decode units (P prefill and D decode vLLM instances, each side its own TP)");
    cmd->add_option(
        "--kv-link", o.kv_link,
        "search, --disaggregated: the KV link, auto (NVLink where the device has it, else ib-ndr), nvlink, ib-ndr, ib-xdr, roce or NGB/s");
    cmd->add_option("--plot", o.plot,
                    "search: write goodput.svg (throughput and goodput against offered rate, best three) and "
                    "pareto.svg (tokens/s per GPU against per user), each with its CSV, into this folder");
    cmd->add_option("--report", o.report, "search: write one self-contained HTML file: the printed output and both charts inline");
    cmd->footer(
        "Examples:\n"
        "  kvplan recommend --model llama-3.1-8b --context 8192 --ttft 0.5 --tpot 0.05\n"
        "  kvplan recommend --model llama-3.1-8b --context 8192 --ttft 0.5 --tpot 0.05 --gpus h100-sxm --num-gpus 8\n"
        "  kvplan recommend --model llama-3.1-70b --context 32768 --ttft 2 --tpot 0.04 --price-per-hour h100-sxm=2.5,h200=3.5,a100-80gb=1.6\n"
        "  kvplan recommend --model deepseek-v3 --context 8192 --ttft 2 --tpot 0.03 --gpus h200 --max-nodes 4\n"
        "SLO search on the simulator (docs/recommend.md):\n"
        "  kvplan recommend --model llama-3.1-8b --slo ttft=2s,tpot=50ms --rate 20 --gpus h100-sxm,l40s \\\n"
        "      --price-per-hour h100-sxm=2.5,l40s=0.9\n"
        "  kvplan recommend --model llama-3.1-8b --slo ttft=2s,tpot=50ms --trace azure-2023-conv --gpus h100-sxm,l40s\n"
        "  kvplan recommend --model llama-3.1-8b --slo ttft=2s,tpot=50ms --rate 20 --gpus h100-sxm --format csv\n"
        "  kvplan recommend --model llama-3.1-8b --slo ttft=1s,tpot=30ms --rate 20 --input-len fixed:4096 --output-len fixed:256 \\\n"
        "      --gpus h100-sxm --max-gpus 2 --disaggregated --price-per-hour h100-sxm=2.5\n"
        "  kvplan recommend --model deepseek-v3 --engine sglang --slo ttft=2s,tpot=100ms --rate 40 --input-len fixed:2000 \\\n"
        "      --output-len fixed:500 --gpus h200 --max-nodes 2");
    return cmd;
}

namespace {

std::vector<Gpu> chosen_gpus(const RecommendOptions& o) {
    std::vector<Gpu> out;
    if (o.gpus == "all") out = known_gpus();
    else
        for (const std::string& id : split_list(o.gpus, "--gpus")) out.push_back(find_gpu(known_gpus(), id, "--gpus"));
    if (out.empty()) usage_error("--gpus: expected comma-separated device ids or all");
    return out;
}

// --price-file's prices, then --price-per-hour's over them.
std::map<std::string, double> prices(const RecommendOptions& o) {
    std::map<std::string, double> out;
    if (!o.price_file.empty()) out = read_price_file(o.price_file, known_gpus()).usd_per_gpu_hour;
    for (const std::string& pair : split_list(o.prices, "--price-per-hour")) {
        const auto eq = pair.find('=');
        if (eq == std::string::npos) usage_error("--price-per-hour: expected GPU=USD pairs such as h100-sxm=2.5, found \"" + pair + "\"");
        const Gpu& g = find_gpu(known_gpus(), pair.substr(0, eq), "--price-per-hour");
        char* end = nullptr;
        const std::string value = pair.substr(eq + 1);
        const double usd = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || !(usd > 0 && usd < 1e6))
            usage_error("--price-per-hour: expected a positive USD figure for " + g.id + ", found \"" + value + "\"");
        out[g.id] = usd;
    }
    return out;
}

// The SLO search's own flags (the --spec-* flags serve both searches).
bool wants_search(const RecommendOptions& o) {
    return !o.slo.empty() || o.rate > 0 || !o.trace.empty() || !o.input_len.empty() || !o.output_len.empty() || o.requests > 0 || o.disaggregated ||
           o.kv_link != "auto" || o.pp != "auto" || o.two_batch_overlap;
}

// --spec-method in the analytic search: the flags checked (and a draft
// model loaded into `draft`) as roofline checks them, priced per candidate
// by the core search; nullopt without --spec-method.
std::optional<RecommendSpec> analytic_spec(const RecommendOptions& o, const ModelSpec& model, const RecommendInputs& in, ModelSpec& draft) {
    const CostModelInputs probe{&model, in.gpus.front(), in.weights, in.kv_dtype, 1, in.efficiency, std::nullopt};
    const std::optional<SpecInputs> checked = resolve_spec(o.spec, model, probe, draft);
    if (!checked) return std::nullopt;
    RecommendSpec s{checked->method, checked->k, checked->rates, nullptr, ""};
    if (s.method == SpecMethod::Draft) {
        s.draft_model = &draft;
        s.draft_label = draft.source.repo_id.empty() ? draft.name : draft.source.repo_id;
    }
    return s;
}

CommandOutput run_analytic(const RecommendOptions& o) {
    if (o.context == 0) usage_error("--context is required (the analytic search; or give --slo with --rate or --trace for the SLO search)");
    if (o.ttft == 0) usage_error("--ttft is required (the analytic search; or give --slo with --rate or --trace for the SLO search)");
    if (o.tpot == 0) usage_error("--tpot is required (the analytic search; or give --slo with --rate or --trace for the SLO search)");
    ModelSpec model = resolve_model(o.model);
    RecommendResult r;
    r.model = model.name;
    if (!o.model.model.empty()) r.served = served_model(o.model.model);
    RecommendInputs& in = r.inputs;
    in.model = &model;
    in.gpus = chosen_gpus(o);
    in.prices = prices(o);
    in.context = o.context;
    in.prompt = o.prompt;
    in.output = o.output;
    in.ttft_s = o.ttft;
    in.tpot_s = o.tpot;
    in.max_gpus = o.max_gpus;
    in.num_gpus = o.num_gpus;
    in.weights = parse_weight_format("--weights-dtype", o.weights_dtype);
    in.kv_dtype = parse_dtype_flag("--kv-dtype", o.kv_dtype);
    in.efficiency = resolve_efficiency(o.efficiency, o.engine);
    use_engine_kv_default(model, in.efficiency);
    in.all_to_all = bundled_all_to_all_latencies();
    if (o.max_nodes == 1 && (o.gpus_per_node > 0 || o.nic != "ib-ndr"))
        usage_error("--gpus-per-node and --nic place layouts over several nodes: add --max-nodes N");
    in.max_nodes = o.max_nodes;
    in.gpus_per_node = o.gpus_per_node;
    if (o.max_nodes > 1) in.nic = find_nic(o.nic);
    ModelSpec draft;  // --spec-method draft: outlives the search, which points into it
    in.spec = analytic_spec(o, model, in, draft);
    r.top = static_cast<std::size_t>(o.top);
    r.wide = o.wide;
    r.rec = recommend(in);
    const std::string f = o.json ? "json" : o.format;
    const int code = r.rec.candidates.empty() ? 1 : 0;  // nothing meets both targets: a CI job can stop on it
    if (f == "json") return {render_recommend_json(r), code};
    if (f == "markdown") return {render_recommend_markdown(r), code};
    if (f == "csv") return {render_recommend_csv(r), code};
    return {render_recommend_table(r), code};
}

}  // namespace

CommandOutput run_recommend(const RecommendOptions& o, std::ostream* progress) {
    // Stopped (its line cleared on a terminal) before the answer is printed or an error thrown.
    const SearchProgress ticker(progress ? *progress : std::cerr, progress ? progress_mode(*progress) : ProgressMode::Off, "recommend");
    if (o.analytic || !wants_search(o)) {
        if (o.analytic && wants_search(o))
            usage_error(
                "--analytic is the steady-batch search: it takes --context --ttft --tpot, not --slo, --rate, --trace, --input-len, "
                "--output-len, --requests, --disaggregated, --kv-link, --pp or --two-batch-overlap");
        if (!o.plot.empty() || !o.report.empty())
            usage_error(std::string(o.plot.empty() ? "--report" : "--plot") + ": the charts are the SLO search's; give --slo with --rate or --trace");
        return run_analytic(o);
    }
    return run_slo_search(o, chosen_gpus(o), prices(o));
}

}  // namespace kvplan
