#include "cli/cmd_diff.hpp"

#include <fmt/format.h>

#include "cli/flag_checks.hpp"
#include "cli/model_options.hpp"
#include "core/error.hpp"
#include "core/gate/scenario.hpp"
#include "core/memory/engine.hpp"
#include "core/model/config_parts.hpp"
#include "core/units.hpp"
#include "io/gpu_db.hpp"
#include "io/model_loader.hpp"
#include "report/diff_report.hpp"

namespace kvplan {

CLI::App* setup_diff(CLI::App& app, DiffOptions& o) {
    CLI::App* cmd = app.add_subcommand("diff", "two models, GPUs or KV dtypes side by side: sizing and capacity, with the change in each figure");
    cmd->add_option("-m,--model", o.models, "the model, or two to compare: A then B (preset, config.json, folder or Hugging Face id)")->required();
    cmd->add_option("--gpu", o.gpus, "GPU id from `kvplan gpus` (default h100-sxm), or two to compare");
    cmd->add_option("--kv-dtype", o.kv_dtypes, "auto|fp32|fp16|bf16|fp8|int8|int4 (default auto), or two to compare");
    cmd->add_option("-c,--context", o.contexts, "tokens per request, comma-separated (default 4096,32768)")
        ->delimiter(',')
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--tp", o.tp, "tensor-parallel ranks, for both")->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
    cmd->add_option("--engine", o.engine, "generic|vllm|vllm-v0|sglang|trtllm");
    cmd->add_option("--mem-util", o.mem_util, "memory fraction (default: the engine's)")->check(finite_range(0.01, 1.0));
    cmd->add_option("-b,--batch", o.batch, "batch for the decode step time and tokens/s (default 1)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1'000'000}));
    CLI::Option* json_flag = cmd->add_flag("--json", o.json, "print JSON");
    cmd->add_option("--format", o.format, "table|json|markdown")
        ->check(CLI::IsMember({"table", "json", "markdown"}))
        ->excludes(json_flag);  // one way to say it
    add_wide_flag(*cmd, o.wide);
    cmd->footer(
        "Examples:\n"
        "  kvplan diff --model llama-3.1-8b --model qwen3-8b --gpu h100-sxm --context 4096,32768\n"
        "  kvplan diff --model llama-3.1-70b --gpu h100-sxm --gpu h200 --tp 4 --engine vllm\n"
        "  kvplan diff --model qwen2.5-7b --kv-dtype auto --kv-dtype fp8 --context 32768\n"
        "  kvplan diff --model configs/old/config.json --model configs/new/config.json --engine vllm");
    return cmd;
}

namespace {

// One side of the comparison.
struct Side {
    ModelSpec model;
    const Gpu* gpu = nullptr;
    std::string kv_dtype;
    std::string label() const { return model_label(model) + " on " + gpu->name + " (" + gpu->id + "), KV dtype " + kv_dtype; }
};

}  // namespace

std::string run_diff(const DiffOptions& o) {
    const std::vector<std::string> gpus = o.gpus.empty() ? std::vector<std::string>{"h100-sxm"} : o.gpus;
    const std::vector<std::string> kv_dtypes = o.kv_dtypes.empty() ? std::vector<std::string>{"auto"} : o.kv_dtypes;
    const int pairs = (o.models.size() == 2) + (gpus.size() == 2) + (kv_dtypes.size() == 2);
    if (o.models.size() > 2 || gpus.size() > 2 || kv_dtypes.size() > 2 || pairs != 1)
        usage_error("diff compares two of one thing: --model A --model B, or --gpu X --gpu Y, or --kv-dtype D --kv-dtype E");
    parse_engine(o.engine);
    for (const std::string& d : kv_dtypes) parse_dtype_flag("--kv-dtype", d);
    const std::vector<std::int64_t> contexts = o.contexts.empty() ? std::vector<std::int64_t>{4096, 32768} : o.contexts;
    Side a{load_model(o.models.front()), &find_gpu(known_gpus(), gpus.front()), kv_dtypes.front()};
    Side b{o.models.size() == 2 ? load_model(o.models.back()) : a.model, &find_gpu(known_gpus(), gpus.back()), kv_dtypes.back()};

    DiffResult d;
    d.label_a = a.label();
    d.label_b = b.label();
    d.setting = fmt::format("{}, TP {}, decode batch {}", engine_label(parse_engine(o.engine)), o.tp, o.batch);

    // Every figure comes from the same computation `kvplan check` gates on.
    auto evaluate = [&](const Side& side, std::int64_t context) {
        ScenarioInputs in;
        in.gpu = side.gpu->id;
        in.engine = o.engine;
        in.tp = o.tp;
        in.context_tokens = context;
        in.kv_dtype = side.kv_dtype;
        if (o.mem_util > 0) in.mem_util = o.mem_util;
        in.batch = o.batch;
        return evaluate_scenario(side.model, *side.gpu, in);
    };
    std::vector<ScenarioResult> ra, rb;
    for (std::int64_t c : contexts) {
        ra.push_back(evaluate(a, c));
        rb.push_back(evaluate(b, c));
    }
    auto fig = [](const ScenarioResult& r, Figure f) { return r.figures[static_cast<std::size_t>(f)]; };
    // A row: its key, its label and the unit shown after it, both sides, which way is better.
    auto add = [&](std::string key, std::string label, std::string unit, std::optional<std::int64_t> ctx, FigureValue va, FigureValue vb,
                   Better better, bool bytes) {
        d.rows.push_back(DiffRow{std::move(key), std::move(label), std::move(unit), ctx, va, vb, better, bytes});
    };
    add("weights_bytes", "weights, whole model", "bytes", std::nullopt, FigureValue::of(ra[0].model_weights_bytes),
        FigureValue::of(rb[0].model_weights_bytes), Better::Lower, true);
    add("weights_bytes_per_gpu", "weights per GPU", "bytes", std::nullopt, FigureValue::of(ra[0].weights_bytes_per_gpu),
        FigureValue::of(rb[0].weights_bytes_per_gpu), Better::Lower, true);
    add("kv_pool_bytes_per_gpu", "KV pool per GPU", "bytes", std::nullopt, FigureValue::of(ra[0].kv_pool_bytes_per_gpu),
        FigureValue::of(rb[0].kv_pool_bytes_per_gpu), Better::Higher, true);
    // A gated figure at context i: its key and direction come from the figure table.
    auto add_figure = [&](Figure f, std::string label, std::string unit, std::size_t i, std::optional<std::int64_t> ctx, bool bytes) {
        add(figure_spec(f).key, std::move(label), std::move(unit), ctx, fig(ra[i], f), fig(rb[i], f), figure_spec(f).better, bytes);
    };
    add_figure(Figure::KvBytesPerToken, "KV bytes per token", "", 0, std::nullopt, false);
    add_figure(Figure::KvCacheTokens, "KV cache tokens (pool)", "", 0, std::nullopt, false);
    for (std::size_t i = 0; i < contexts.size(); ++i) {
        const std::string at = " at " + group_digits(contexts[i]) + " tokens";
        add_figure(Figure::KvBytesPerSequence, "KV bytes per request" + at, "", i, contexts[i], true);
        add_figure(Figure::MaxRequests, "max requests" + at, "", i, contexts[i], false);
        add_figure(Figure::DecodeStepS, fmt::format("decode step, batch {}{}", o.batch, at), "s", i, contexts[i], false);
        add_figure(Figure::DecodeTokensPerS, fmt::format("decode tokens/s, batch {}{}", o.batch, at), "", i, contexts[i], false);
    }
    for (std::size_t i = 0; i < contexts.size(); ++i) {
        const bool a_short = fig(ra[i], Figure::MaxRequests).integer < o.batch, b_short = fig(rb[i], Figure::MaxRequests).integer < o.batch;
        if (a_short || b_short)
            d.notes.push_back(fmt::format("at {} tokens a batch of {} does not fit in memory for {}; its decode figures are what the step would take",
                                          group_digits(contexts[i]), o.batch, a_short ? "A" : "B"));
    }
    std::vector<const ModelSpec*> models = {&a.model};
    if (o.models.size() == 2) models.push_back(&b.model);
    for (const ModelSpec* m : models)
        for (std::int64_t c : contexts)
            if (m->max_position_tokens > 0 && c > m->max_position_tokens)
                d.notes.push_back(fmt::format("{}: {} tokens is beyond its max_position_embeddings ({})", m->name, group_digits(c),
                                              group_digits(m->max_position_tokens)));

    const std::string format = o.json ? "json" : o.format;
    if (format == "json") return render_diff_json(d);
    if (format == "markdown") return render_diff_markdown(d);
    return render_diff_table(d, o.wide ? Width::Wide : Width::Fit);
}

}  // namespace kvplan
