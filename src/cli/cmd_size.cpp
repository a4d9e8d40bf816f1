#include "cli/cmd_size.hpp"

#include "cli/flag_checks.hpp"
#include "core/memory/kv_size.hpp"
#include "core/model/config_parts.hpp"
#include "core/model/weights.hpp"
#include "report/size_report.hpp"

namespace kvplan {

CLI::App* setup_size(CLI::App& app, SizeOptions& o) {
    CLI::App* cmd = app.add_subcommand("size", "KV-cache bytes per token, sequence, batch and GPU; weights' size");
    add_model_options(*cmd, o.model);
    cmd->add_option("-c,--context", o.context, "tokens per sequence (default: the model's max_position_embeddings)")
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("-b,--batch", o.batch, "concurrent sequences")->check(CLI::Range(std::int64_t{1}, std::int64_t{10'000'000}));
    cmd->add_option("--kv-dtype", o.kv_dtype, "auto|fp32|fp16|bf16|fp8|int8|int4 (auto: bf16 stays bf16, else fp16, as vLLM)");
    cmd->add_option("--mamba-cache-dtype", o.mamba_cache_dtype,
                    "Mamba/linear-attention state dtype, as vLLM's flag (auto: the model's dtype; --kv-dtype does not apply)");
    cmd->add_option("--mamba-ssm-cache-dtype", o.mamba_ssm_cache_dtype,
                    "dtype of the recurrent (SSM) part of that state, as vLLM's flag (auto: --mamba-cache-dtype)");
    cmd->add_option("--tp", o.tp, "tensor-parallel ranks")->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
    CLI::Option* json_flag = cmd->add_flag("--json", o.json, "print JSON (schema: docs/size.md)");
    cmd->add_option("--format", o.format, "table|json|markdown|csv")
        ->check(CLI::IsMember({"table", "json", "markdown", "csv"}))
        ->excludes(json_flag);  // one way to say it
    add_wide_flag(*cmd, o.wide);
    cmd->footer(
        "Examples:\n"
        "  kvplan size --model llama-3.1-8b --context 8192 --batch 32\n"
        "  kvplan size --model gemma-2-9b --kv-dtype fp8 --tp 2 --json   # or a config.json / model folder\n"
        "  kvplan size --layers 32 --kv-heads 32 --head-dim 128 --context 2000   # a 7B shape without a config");
    return cmd;
}

std::string run_size(const SizeOptions& o) {
    // Load: a config, a preset or a hand-built shape -> one ModelSpec.
    ModelSpec model = resolve_model(o.model);

    // Compute: KV sizing by layer group, then the weights.
    KvOptions kv;
    kv.kv_dtype = parse_dtype_flag("--kv-dtype", o.kv_dtype);
    kv.state_dtype = parse_state_dtype_flag("--mamba-cache-dtype", o.mamba_cache_dtype);
    kv.ssm_state_dtype = parse_state_dtype_flag("--mamba-ssm-cache-dtype", o.mamba_ssm_cache_dtype);
    if (o.context > 0) kv.context = o.context;
    kv.batch = o.batch;
    kv.tp = o.tp;
    SizeResult result;
    result.model = &model;
    result.model_label = model_label(model);
    result.kv = size_kv(model, kv);
    result.weights = size_weights(model);
    result.warnings = model.warnings;
    if (o.context > 0 && model.max_position_tokens > 0 && o.context > model.max_position_tokens)
        // vLLM refuses max_model_len beyond max_position_embeddings unless
        // VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (vllm/config: _get_and_verify_max_len).
        result.warnings.push_back("--context " + std::to_string(o.context) + " exceeds the model's max_position_embeddings (" +
                                  std::to_string(model.max_position_tokens) + "); vLLM refuses it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1");

    // Render.
    std::string format = o.json ? "json" : o.format;
    if (format == "json") return render_size_json(result);
    if (format == "markdown") return render_size_markdown(result);
    if (format == "csv") return render_size_csv(result);
    return render_size_table(result, o.wide ? Width::Wide : Width::Fit);
}

}  // namespace kvplan
