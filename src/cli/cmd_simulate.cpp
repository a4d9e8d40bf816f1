#include "cli/cmd_simulate.hpp"

#include <charconv>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "cli/flag_checks.hpp"
#include "cli/sim_setup.hpp"
#include "cli/simulate_checks.hpp"
#include "core/digits.hpp"
#include "core/error.hpp"
#include "core/memory/kv_size.hpp"
#include "core/model/config_parts.hpp"
#include "core/plan/engine_setup.hpp"
#include "core/plan/simulation.hpp"
#include "core/sim/metrics.hpp"
#include "core/sim/synthetic.hpp"
#include "io/file_writer.hpp"
#include "report/html_report.hpp"
#include "report/plot_files.hpp"
#include "report/simulate_report.hpp"

namespace kvplan {

CLI::App* setup_simulate(CLI::App& app, SimulateOptions& o) {
    CLI::App* cmd = app.add_subcommand(
        "simulate", "replay traffic through a continuous-batching simulator (vLLM's or SGLang's scheduler): latency percentiles, goodput, KV usage");
    cmd->add_option("--engine", o.engine, "vllm|sglang: whose scheduler, KV pool and speed profile (default vllm; `kvplan engines`)")
        ->check(CLI::IsMember({"vllm", "sglang"}));
    add_model_options(*cmd, o.model);
    add_gpu_options(*cmd, o.gpu);
    add_efficiency_options(*cmd, o.efficiency);
    const auto count = CLI::Range(std::int64_t{1}, std::int64_t{100'000'000});
    cmd->add_option("--tp", o.tp, "tensor-parallel ranks")->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
    cmd->add_option("--pp", o.pp, "pipeline stages (vLLM's --pipeline-parallel-size), as many batches in flight")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
    cmd->add_option("--max-num-seqs", o.max_num_seqs, "sequences per step (default: vLLM's for the device; sglang: --max-running-requests)")
        ->check(count);
    cmd->add_option("--max-num-batched-tokens", o.max_num_batched_tokens, "tokens per step (default: vLLM's; sglang: --chunked-prefill-size)")
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--long-prefill-token-threshold", o.long_prefill_threshold, "cap on one request's prefill chunk (0: none)")
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{0}, kMaxTokens));
    cmd->add_option("--block-size", o.block_size, "tokens per KV block (default 16; sglang: --page-size, 1 only)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
    cmd->add_option("--num-gpu-blocks", o.num_gpu_blocks,
                    "KV blocks, replacing the computed pool (vLLM's num_gpu_blocks_override; with sglang tokens, as --max-total-tokens)")
        ->check(count);
    cmd->add_option("--mem-util", o.mem_util, "vLLM gpu_memory_utilization (default 0.90), SGLang mem_fraction_static (default by TP)")
        ->check(finite_range(0.01, 1.0));
    cmd->add_option("--vllm-version", o.vllm_version, "the vLLM release whose start-up profile sizes the pool (e.g. 0.19.0; see concurrency)");
    cmd->add_option("--max-model-len", o.max_model_len, "vLLM max_model_len, SGLang context_length (default: the model's)")
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--kv-dtype", o.kv_dtype, "auto|fp32|fp16|bf16|fp8|int8|int4");
    cmd->add_option("--weights-dtype", o.weights_dtype,
                    "auto|fp16|bf16|fp8[:w8a8|:w8a16]|int8|int4[:gN]|nvfp4|mxfp4|q8_0|q4_0|q4_k_m|q4f16_1|exl2:B");
    cmd->add_option("--schedule-policy", o.schedule_policy, "sglang: fcfs|lpm (SGLang's --schedule-policy, default fcfs)")
        ->check(CLI::IsMember({"fcfs", "lpm"}));
    cmd->add_option(
        "--cpu-offload", o.cpu_offload,
        "offload KV to this much host memory, e.g. 64GiB (vLLM's --kv-offloading-size, total over TP x PP ranks; each DP rank has its own)");
    cmd->add_flag("--no-prefix-caching", o.no_prefix_caching, "turn prefix caching off (vLLM's automatic prefix caching, SGLang's radix cache)");
    cmd->add_option("--trace", o.trace,
                    "replay this trace: a file (Azure CSV, Mooncake JSONL, JSONL with arrival_time, arrival_s CSV, vllm bench serve's "
                    "--save-detailed JSON) or a bundled one: azure-2023-conv, azure-2023-code");
    cmd->add_option("--trace-format", o.trace_format, "auto|azure|mooncake|jsonl|csv|timestamps|vllm-bench (docs/compare.md)")
        ->check(CLI::IsMember({"auto", "azure", "mooncake", "jsonl", "csv", "timestamps", "vllm-bench"}));
    cmd->add_flag("--compare", o.compare,
                  "print the trace's measured TTFT, TPOT, ITL and E2E beside the simulated, with the error (a vllm bench serve "
                  "--save-detailed JSON, or a requests.jsonl with the server's timestamps; docs/compare.md)");
    cmd->add_option("--time-scale", o.time_scale, "replay the trace this many times faster")->check(finite_range(1e-6, 1e6));
    cmd->add_option("--limit", o.limit, "only the first N requests of the trace")->check(count);
    cmd->add_option("--prefix-tokens", o.prefix_tokens, "every prompt starts with the same system prompt of N tokens (counted in its length)")
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--rate", o.rate, "synthetic: requests per second (open loop)")->check(finite_range(1e-9, 1e9));
    cmd->add_option("--requests", o.requests, "synthetic: how many requests")->check(count);
    cmd->add_option("--concurrency", o.concurrency, "synthetic: closed loop of this many clients instead of --rate")->check(count);
    cmd->add_option("--input-len", o.input_len, "synthetic prompt lengths: fixed:N, uniform:A-B, lognormal:MEAN,SIGMA or from:TRACE");
    cmd->add_option("--output-len", o.output_len, "synthetic output lengths, the same forms");
    cmd->add_option("--burstiness", o.burstiness, "synthetic: gamma shape of the gaps (1: Poisson)")->check(finite_range(1e-3, 1e3));
    cmd->add_option("--seed", o.seed, "synthetic: random seed (same seed, same output)")->check(seed_value());
    cmd->add_option("--replicas", o.replicas, "engine instances behind a router, each with the whole KV pool (default 1)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1024}));
    cmd->add_option("--router", o.router, "round-robin, or least-loaded (fewest outstanding requests)")
        ->check(CLI::IsMember({"round-robin", "least-loaded"}));
    cmd->add_option("--prefill-replicas", o.prefill_replicas, "disaggregated prefill/decode: prefill instances (with --decode-replicas)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1024}));
    cmd->add_option("--decode-replicas", o.decode_replicas, "disaggregated prefill/decode: decode instances, pulling each prompt's KV")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1024}));
    cmd->add_option("--prefill-gpu", o.prefill_gpu, "the prefill instances' device (default --gpu)");
    cmd->add_option("--prefill-tp", o.prefill_tp, "the prefill instances' TP ranks (default --tp)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
    cmd->add_option("--decode-gpu", o.decode_gpu, "the decode instances' device (default --gpu)");
    cmd->add_option("--decode-tp", o.decode_tp, "the decode instances' TP ranks (default --tp)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
    cmd->add_option("--prefill-dp", o.prefill_dp, "the prefill instances' DP attention ranks, MoE models (default --dp)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1024}));
    cmd->add_option("--decode-dp", o.decode_dp, "the decode instances' DP attention ranks, MoE models (default --dp)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1024}));
    cmd->add_option("--kv-link", o.kv_link, "the KV transfer link: nvlink, ib-ndr (default), ib-xdr, roce, or a bandwidth such as 50GB/s");
    add_spec_options(*cmd, o.spec, "every decode step verifies K drafts (docs/simulate.md)");
    add_scale_out_options(*cmd, o,
                          "data-parallel attention ranks (vLLM's --data-parallel-size, SGLang's --dp with --enable-dp-attention): "
                          "each a scheduler with its own KV pool, all stepping in lockstep (docs/simulate.md)");
    cmd->add_option("--expert-imbalance", o.expert_imbalance, "busiest EP rank's routed tokens over the mean, >= 1 (default 1: uniform routing)");
    cmd->add_flag(
        "--two-batch-overlap", o.two_batch_overlap,
        "EP layouts: two micro-batches, one's compute hiding the other's all-to-all (vLLM --enable-dbo, SGLang --enable-two-batch-overlap)");
    add_node_options(*cmd, o.nodes);
    cmd->add_flag("--layerwise-transfer", o.layerwise_transfer,
                  "send the KV layer by layer beside the last prefill chunk (only the last layer's share exposed)");
    cmd->add_option("--slo", o.slo, "targets for goodput, e.g. ttft=2s,tpot=50ms,e2e=30s");
    cmd->add_flag("--json", o.json, "print JSON (schema: docs/simulate.md)");
    cmd->add_option("--requests-csv", o.requests_csv, "write one row per request to this file");
    cmd->add_option("--timeseries-csv", o.timeseries_csv, "write the per-second series to this file");
    cmd->add_option("--plot", o.plot, "write latency_cdf.svg and timeseries.svg, each with its CSV, into this folder (created when missing)");
    cmd->add_option("--report", o.report, "write one self-contained HTML file: the printed output and both charts inline");
    cmd->add_flag("--debug-invariants", o.debug_invariants,
                  "check the simulator's invariants (docs/invariants.md) after every step; a broken one is exit 70");
    cmd->footer(
        "Examples:\n"
        "  kvplan simulate --model llama-3.1-8b --gpu h100-sxm --trace azure-2023-conv --limit 2000 \\\n"
        "      --slo ttft=2s,tpot=50ms --plot plots\n"
        "  kvplan simulate --model llama-3.1-8b --gpu l40s --rate 5 --requests 1000 --input-len lognormal:1000,0.8 \\\n"
        "      --output-len uniform:50-400 --seed 1\n"
        "  kvplan simulate --engine sglang --model llama-3.1-8b --gpu h100-sxm --trace azure-2023-conv \\\n"
        "      --limit 2000\n"
        "  kvplan simulate --model llama-3.1-8b --gpu h100-sxm --trace azure-2023-code --replicas 4 \\\n"
        "      --router least-loaded\n"
        "  kvplan simulate --model llama-3.1-70b --gpu h100-sxm --tp 2 --pp 2 --trace azure-2023-conv \\\n"
        "      --limit 2000\n"
        "  kvplan simulate --model llama-3.1-8b --gpu h100-sxm --trace azure-2023-code --limit 2000 \\\n"
        "      --prefill-replicas 1 --decode-replicas 3 --kv-link ib-ndr\n"
        "  kvplan simulate --model llama-3.1-8b --gpu h100-sxm --trace azure-2023-conv --limit 2000 \\\n"
        "      --prefix-tokens 4000 --num-gpu-blocks 1500 --time-scale 0.5 --cpu-offload 64GiB\n"
        "  kvplan simulate --model llama-3.1-8b --gpu h100-sxm --rate 2 --requests 200 --input-len fixed:1024 \\\n"
        "      --output-len fixed:256 --spec-method eagle --spec-tokens 3 --acceptance 0.8,0.7,0.6\n"
        "  kvplan simulate --model deepseek-v3 --gpu h200 --dp 8 --enable-expert-parallel --rate 20 \\\n"
        "      --requests 2000 --input-len fixed:2000 --output-len fixed:500 --slo ttft=2s,tpot=100ms\n"
        "  kvplan simulate --model deepseek-v3 --gpu h200 --enable-expert-parallel --prefill-replicas 1 \\\n"
        "      --decode-replicas 1 --prefill-dp 8 --decode-dp 8 --rate 10 --requests 400 \\\n"
        "      --input-len fixed:2000 --output-len fixed:300\n"
        "  kvplan simulate --engine sglang --model deepseek-v3 --gpu h200 --tp 8 --dp 8 --ep 8 --rate 10 \\\n"
        "      --requests 1000 --input-len fixed:2000 --output-len fixed:500");
    return cmd;
}

namespace {

// A max_model_len past what the model's config allows: the engine refuses
// to start (vLLM's _get_and_verify_max_len, SGLang's ModelConfig) unless an
// environment variable overrides it; the run goes on, saying so.
void note_long_max_model_len(const ModelSpec& model, const ServeKnobs& k, SimulateResult& r) {
    if (model.max_position_tokens <= 0 || r.max_model_len <= model.max_position_tokens) return;
    const bool sglang = k.sglang();
    r.notes.push_back(fmt::format("max_model_len {} exceeds the model's max_position_embeddings ({}); {} refuses it unless {}=1",
                                  group_digits(r.max_model_len), group_digits(model.max_position_tokens), sglang ? "SGLang" : "vLLM",
                                  sglang ? "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN" : "VLLM_ALLOW_LONG_MAX_MODEL_LEN"));
}

// The files a run writes, after it: the CSVs, the charts, the HTML report.
std::string finish(const SimulateOptions& o, const SimulateResult& r) {
    if (!o.requests_csv.empty()) write_file_atomically(o.requests_csv, render_requests_csv(r));
    if (!o.timeseries_csv.empty()) write_file_atomically(o.timeseries_csv, render_timeseries_csv(r));
    if (!o.plot.empty()) write_plot_files(o.plot, render_simulate_plots(r));
    std::string text = o.json ? render_simulate_json(r) : render_simulate_table(r);
    if (!o.report.empty()) write_file_atomically(o.report, render_html_report(simulate_report_title(r), text, render_simulate_plots(r)));
    return text;
}

// What refusals call the workload: the trace's path, or the synthetic one.
std::string workload_source(const SimulateOptions& o) {
    return o.trace.empty() ? kSyntheticSource : o.trace;
}

// The output files, checked before the run rather than after it.
void check_outputs(const SimulateOptions& o) {
    if (!o.requests_csv.empty()) check_writable(o.requests_csv);
    if (!o.timeseries_csv.empty()) check_writable(o.timeseries_csv);
    if (!o.plot.empty()) prepare_plot_dir(o.plot);
    if (!o.report.empty()) check_writable(o.report);
}

// The trace or synthetic traffic, with --prefix-tokens' shared system prompt;
// with --compare, the served run's own workload.
Workload workload(const SimulateOptions& o, const std::optional<ServedRun>& served, SimulateResult& r) {
    Workload w = served ? served->workload : make_workload(o, r.workload);
    if (served) r.workload = fmt::format("{} ({} requests)", o.trace, group_digits(static_cast<std::int64_t>(w.requests.size())));
    r.concurrency = w.concurrency;
    if (o.prefix_tokens > 0) {
        share_system_prompt(w, o.prefix_tokens);
        r.workload += fmt::format(", a {}-token system prompt shared", group_digits(o.prefix_tokens));
    }
    return w;
}

// The engine's pool and limits in r.config (vLLM; SGLang's returned, its
// figures in r.config too); a P/D run sizes each side's pool itself.
SglangConfig engine_pool(const SimulateOptions& o, const ServeKnobs& knobs, const ModelSpec& model, const Gpu& gpu, const Workload& w,
                         SimulateResult& r) {
    SglangConfig sglang;
    if (knobs.sglang()) {
        if (!o.vllm_version.empty()) usage_error("--vllm-version applies to --engine vllm only");
        sglang = sglang_config(knobs, model, gpu, r);
    } else if (o.schedule_policy != "fcfs") {
        usage_error("--schedule-policy " + o.schedule_policy +
                    " is SGLang's: pass --engine sglang (vLLM's scheduler here is first come first served)");
    } else if (o.prefill_replicas == 0) {
        r.config = engine_config(knobs, model, gpu, r.max_model_len, r.pool_source);
    }
    if (o.prefill_replicas == 0) refuse_long_requests(w, r.max_model_len, workload_source(o), knobs.sglang());
    return sglang;
}

}  // namespace

std::string run_simulate(const SimulateOptions& o) {
    const ServeKnobs knobs = serve_knobs(o);
    check_cpu_offload_flags(o, knobs);
    ModelSpec model = resolve_model(o.model);
    const Gpu gpu = resolve_gpu(o.gpu);
    const Efficiency efficiency = resolve_efficiency(o.efficiency, o.engine);
    check_device(o, gpu, efficiency);
    check_tp(model, o.tp);
    const std::optional<ScaleOut> layout = layout_of(knobs, model, gpu);
    if (o.pp > 1) check_pp(o, knobs, model, gpu);
    check_disagg_flags(o, knobs);
    check_spec_flags(o, knobs);
    check_outputs(o);

    SimulateResult r;
    r.model_label = model_label(model);
    r.gpu_name = gpu.name;
    const std::optional<ServedRun> served = o.compare ? std::optional<ServedRun>(read_compare_run(o)) : std::nullopt;
    const Workload w = workload(o, served, r);
    const SglangConfig sglang = engine_pool(o, knobs, model, gpu, w, r);
    if (!o.slo.empty()) r.slo = parse_slo(o.slo);

    const Router router = o.router == "least-loaded" ? Router::LeastLoaded : Router::RoundRobin;
    const RunSetup setup{&model, gpu, efficiency, ClusterConfig{o.replicas, router}, spec_resolver(o.spec, model), o.debug_invariants};
    if (o.prefill_replicas > 0) simulate_pd(knobs, model, pd_unit(o, model, efficiency), router, w, workload_source(o), r, o.debug_invariants);
    else if (layout) simulate_layout(knobs, setup, *layout, w, sglang, r);
    else simulate_replicas(knobs, setup, w, sglang, r);
    r.summary = summarise(r.run, r.slo);
    if (served) r.compare = compare_served(*served, r.summary, r.run.timeseries);
    note_long_max_model_len(model, knobs, r);
    return finish(o, r);
}

}  // namespace kvplan
