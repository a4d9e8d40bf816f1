#include "cli/cmd_concurrency.hpp"

#include <cctype>

#include "cli/flag_checks.hpp"
#include "cli/scale_out_options.hpp"
#include "core/byte_size.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/memory/capacity.hpp"
#include "core/model/config_parts.hpp"
#include "core/model/weight_format.hpp"
#include "core/sim/cpu_tier.hpp"
#include "core/sim/scheduler.hpp"
#include "io/engine_db.hpp"
#include "report/concurrency_report.hpp"

namespace kvplan {

CLI::App* setup_concurrency(CLI::App& app, ConcurrencyOptions& o) {
    CLI::App* cmd = app.add_subcommand("concurrency", "GPU memory budget and how many requests fit at each context length");
    add_model_options(*cmd, o.model);
    add_gpu_options(*cmd, o.gpu);
    const auto count = CLI::Range(std::int64_t{1}, std::int64_t{1'000'000});
    cmd->add_option("--gpus", o.gpus, "GPUs in all (default: tp x pp); the rest are data-parallel replicas")->check(count);
    cmd->add_option("--tp", o.tp, "tensor-parallel ranks per replica")->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
    cmd->add_option("--pp", o.pp, "pipeline-parallel stages per replica")->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}));
    add_scale_out_options(*cmd, o, "attention data-parallel ranks (vLLM --data-parallel-size; SGLang --dp with --enable-dp-attention)");
    const auto node_count = CLI::Range(std::int64_t{1}, std::int64_t{4096});
    cmd->add_option("--nodes", o.nodes, "nodes a DP/EP layout spans (memory per GPU does not change; see roofline --nodes)")->check(node_count);
    cmd->add_option("--gpus-per-node", o.gpus_per_node, "GPUs on one scale-up link: 8 in an HGX node (default), 72 in an NVL72 rack (default there)")
        ->check(node_count);
    cmd->add_option("-c,--context", o.contexts, "tokens per request, comma-separated (default: 4096,32768,131072 up to max_model_len)")
        ->delimiter(',')
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--mem-util", o.mem_util, "memory fraction (vLLM gpu_memory_utilization, SGLang mem_fraction_static, TRT-LLM free fraction)")
        ->check(finite_range(0.01, 1.0));  // 0 would silently mean the default
    cmd->add_option("--weights", o.weights, "weights per GPU, replacing the computed size (e.g. 14.96GiB, as engines log it)");
    cmd->add_option("--overhead", o.overhead, "runtime overhead per GPU, replacing the estimate (e.g. 2GB)");
    cmd->add_option("--kv-pool", o.kv_pool, "KV pool per GPU, replacing the whole budget (e.g. a log's 'Available KV cache memory')");
    cmd->add_option("--kv-dtype", o.kv_dtype, "auto|fp32|fp16|bf16|fp8|int8|int4");
    cmd->add_option("--weights-dtype", o.weights_dtype,
                    "auto|fp32|fp16|bf16|fp8|int8|int4: serve unquantized weights in this dtype (a lower one leaves embeddings and head at 16 bits)");
    cmd->add_option("--mamba-cache-dtype", o.mamba_cache_dtype, "Mamba/linear-attention state dtype (auto|fp32|fp16|bf16)");
    cmd->add_option("--mamba-ssm-cache-dtype", o.mamba_ssm_cache_dtype, "recurrent (SSM) part of that state (auto|fp32|fp16|bf16)");
    cmd->add_option("--block-size", o.block_size, "tokens per KV block (default: vLLM 16, SGLang 1, TRT-LLM 32, generic 16)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1'000'000}));
    cmd->add_option("--allocation", o.allocation, "paged|contiguous (contiguous: every request reserves --max-tokens)")
        ->check(CLI::IsMember({"paged", "contiguous"}));
    cmd->add_option("--max-tokens", o.max_tokens, "contiguous allocation: tokens reserved per request (default: max_model_len)")
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--prefix-tokens", o.prefix_tokens, "a shared prefix (system prompt) stored once for all requests")
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{0}, kMaxTokens));
    cmd->add_option("--engine", o.engine, "generic|vllm|vllm-v0|sglang|trtllm: follow that engine's accounting and print its log lines");
    cmd->add_option("--max-model-len", o.max_model_len, "the engine's max_model_len (default: max_position_embeddings)")
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--max-num-batched-tokens", o.max_batched_tokens, "tokens per forward pass (default: the engine's; sizes activations)")
        ->transform(token_count())
        ->check(CLI::Range(std::int64_t{1}, kMaxTokens));
    cmd->add_option("--max-num-seqs", o.max_num_seqs, "sequences the sampler is sized for (default: the engine's)")->check(count);
    cmd->add_option("--vllm-version", o.vllm_version, "--engine vllm: the release whose start-up rules size the pool (e.g. 0.19.0; 'list')");
    cmd->add_flag("--enforce-eager", o.enforce_eager, "--engine vllm: no CUDA graphs (and no graph memory profile)");
    cmd->add_option("--cpu-offload-gb", o.cpu_offload_gb, "--engine vllm: GiB of weights per GPU kept in host memory (vLLM's --cpu-offload-gb)")
        ->check(CLI::Range(0.0, 4096.0));
    cmd->add_option("--cpu-offload", o.cpu_offload,
                    "--engine vllm: host memory for KV offload, e.g. 64GiB (vLLM's --kv-offloading-size, total over TP x PP)");
    CLI::Option* json_flag = cmd->add_flag("--json", o.json, "print JSON (schema: docs/concurrency.md)");
    cmd->add_option("--format", o.format, "table|json|markdown|csv")
        ->check(CLI::IsMember({"table", "json", "markdown", "csv"}))
        ->excludes(json_flag);  // one way to say it
    add_wide_flag(*cmd, o.wide);
    cmd->footer(
        "Examples:\n"
        "  kvplan concurrency --model llama-3.1-8b --gpu h100-sxm --context 4096,32768,131072\n"
        "  kvplan concurrency --model llama-3.1-70b --gpu a100-80gb --tp 4 --gpus 8 --engine vllm\n"
        "  kvplan concurrency --model llama-3.1-8b --gpu rtx-4090 --engine vllm --vllm-version 0.19.0 \\\n"
        "      --max-model-len 32768 --max-num-batched-tokens 2048\n"
        "  kvplan concurrency --model llama-3.1-8b --gpu h100-sxm --engine vllm --cpu-offload 64GiB --context 8192\n"
        "  kvplan concurrency --model qwen2.5-7b --gpu-mem 24GiB --kv-dtype fp8 --prefix-tokens 2000 --context 8192\n"
        "  kvplan concurrency --layers 32 --kv-heads 32 --head-dim 128 --gpu-mem 40GB --mem-util 1 --weights 14GB \\\n"
        "      --overhead 2GB --context 2000,8000,500 --block-size 1   # 22, 5 and 91 requests (docs/concurrency.md)\n"
        "  kvplan concurrency --model llama-3.1-8b --gpu-mem 40GB --allocation contiguous --max-tokens 4000 --context 200\n"
        "  kvplan concurrency --model deepseek-v3 --gpu h200 --engine vllm --tp 1 --dp 8 --enable-expert-parallel\n"
        "  kvplan concurrency --model deepseek-v3 --gpu h200 --engine sglang --tp 8 --dp 8 --ep 8   # docs/scale-out.md");
    return cmd;
}

namespace {

// --dp, --ep and the engines' MoE flags; nullopt when none is given, so the
// plain TP x PP plan stays as it was.
// --nodes / --gpus-per-node: where one replica's GPUs sit (roofline's
// rule, scale_out_options.hpp); memory per GPU does not depend on it.
void place_on_nodes(const ConcurrencyOptions& o, ConcurrencyResult& r) {
    const CapacityPlan& p = r.plan;
    if (!p.scale_out) usage_error("--nodes and --gpus-per-node place a DP attention + EP layout: add --dp or --ep");
    const std::int64_t gpus = p.scale_out->gpus * p.pp;
    const std::int64_t per_node =
        resolve_gpus_per_node(NodeFlags{o.nodes, o.gpus_per_node, "ib-ndr"}, gpus, default_gpus_per_node(p.gpu.interconnect));
    NodePlacement n;
    n.gpus_per_node = std::min(per_node, gpus);
    n.nodes = (gpus + per_node - 1) / per_node;
    n.tp_spans_nodes = p.scale_out->attention_tp > per_node;
    r.placement = n;
}

std::optional<ScaleOutInputs> scale_out_inputs(const ConcurrencyOptions& o, Engine engine) {
    return scale_out_from_flags(layout_flags(o), engine == Engine::Sglang   ? ScaleOutRules::Sglang
                                                 : engine == Engine::Trtllm ? ScaleOutRules::Trtllm
                                                                            : ScaleOutRules::Vllm);
}

}  // namespace

// --cpu-offload SIZE: what vLLM's CPU tier holds, in blocks of the GPU's
// block size (one KV-cache group; vllm/v1/kv_offload/spec.py takes the lcm
// of the groups' block sizes otherwise) split over TP x PP ranks
// (NativeOffloadingParser.configure_kv_transfer: kv_bytes_per_rank = size / ranks).
static CpuTierSummary cpu_tier_summary(const std::string& size, const CapacityPlan& p) {
    const std::int64_t bytes = parse_byte_size("--cpu-offload", size, false);
    if (p.engine != Engine::Vllm) usage_error("--cpu-offload: vLLM's OffloadingConnector is modelled; pass --engine vllm");
    if (!p.vllm || !kv_groups_for(*p.vllm, p.max_model_len).empty() || p.kv_bytes_per_token_per_gpu <= 0)
        usage_error("--cpu-offload: only models with one full-attention (or MLA) KV-cache group are modelled");
    CpuTierSummary c;
    c.size = size;
    c.ranks = checked_mul(p.tp, p.pp);
    const std::int64_t block_bytes = checked_mul(p.block_size, p.kv_bytes_per_token_per_gpu);
    c.blocks = cpu_tier_blocks(bytes, c.ranks, block_bytes);
    c.tokens = checked_mul(c.blocks, p.block_size);
    c.bytes_per_rank = checked_mul(c.blocks, block_bytes);
    return c;
}

std::string run_concurrency(const ConcurrencyOptions& o) {
    if (o.vllm_version == "list") return render_vllm_releases();
    ModelSpec model = resolve_model(o.model);
    CapacityInputs in;
    if (!o.kv_pool.empty()) in.kv_pool_bytes = parse_byte_size("--kv-pool", o.kv_pool, true);
    // Replaying a log needs no device: the log's pool is the whole budget.
    if (in.kv_pool_bytes && o.gpu.gpu.empty() && o.gpu.gpu_mem.empty()) {
        in.gpu = gpu_from_memory(*in.kv_pool_bytes, "KV pool of " + o.kv_pool + " (no device)");
        in.gpu.memory_source = "--kv-pool";
    } else {
        in.gpu = resolve_gpu(o.gpu);
    }
    in.engine = parse_engine(o.engine);
    in.gpus = o.gpus;
    in.tp = o.tp;
    in.pp = o.pp;
    in.scale_out = scale_out_inputs(o, in.engine);
    in.contexts = o.contexts;
    if (o.mem_util != 0) in.mem_util = o.mem_util;
    if (!o.weights.empty()) in.weights_bytes = parse_byte_size("--weights", o.weights, true);
    if (!o.overhead.empty()) in.overhead_bytes = parse_byte_size("--overhead", o.overhead, true);
    in.kv_dtype = parse_dtype_flag("--kv-dtype", o.kv_dtype);
    // As the engine stores it (linear layers in the dtype; embeddings and the
    // LM head as the engine leaves them), the bytes simulate's pool assumes.
    if (parse_dtype_flag("--weights-dtype", o.weights_dtype)) {
        const EngineProfile& profile = find_engine("--engine", o.engine == "vllm-v0" ? "vllm" : o.engine);
        in.weights_format = int4_as_stored(parse_weight_format("--weights-dtype", o.weights_dtype), profile.int4_group_bits, profile.quantize_head);
    }
    in.state_dtype = parse_state_dtype_flag("--mamba-cache-dtype", o.mamba_cache_dtype);
    in.ssm_state_dtype = parse_state_dtype_flag("--mamba-ssm-cache-dtype", o.mamba_ssm_cache_dtype);
    if (o.block_size > 0) in.block_size = o.block_size;
    in.allocation = o.allocation == "contiguous" ? Allocation::Contiguous : Allocation::Paged;
    if (o.max_tokens > 0) {
        if (in.allocation != Allocation::Contiguous) usage_error("--max-tokens applies to --allocation contiguous only");
        in.max_tokens = o.max_tokens;
    }
    in.prefix_tokens = o.prefix_tokens;
    if (o.max_model_len > 0) in.max_model_len = o.max_model_len;
    if (o.max_batched_tokens > 0) in.max_batched_tokens = o.max_batched_tokens;
    if (o.max_num_seqs > 0) in.max_num_seqs = o.max_num_seqs;
    if (!o.vllm_version.empty()) {
        if (in.engine != Engine::Vllm) usage_error("--vllm-version applies to --engine vllm only");
        in.vllm_release = parse_vllm_release(o.vllm_version);
    }
    if ((o.enforce_eager || o.cpu_offload_gb > 0) && in.engine != Engine::Vllm)
        usage_error(std::string(o.enforce_eager ? "--enforce-eager" : "--cpu-offload-gb") + " applies to --engine vllm only");
    if (o.cpu_offload_gb > 0 && o.pp > 1) usage_error("--cpu-offload-gb is modelled for one pipeline stage (--pp 1)");
    in.enforce_eager = o.enforce_eager;
    in.cpu_offload_bytes = static_cast<std::int64_t>(o.cpu_offload_gb * 1073741824.0 + 0.5);

    ConcurrencyResult result;
    result.model = &model;
    result.model_label = model_label(model);
    result.plan = plan_capacity(model, in);
    if (o.nodes > 0 || o.gpus_per_node > 0) place_on_nodes(o, result);
    if (!o.cpu_offload.empty()) result.cpu_tier = cpu_tier_summary(o.cpu_offload, result.plan);

    const std::string format = o.json ? "json" : o.format;
    if (format == "json") return render_concurrency_json(result);
    if (format == "markdown") return render_concurrency_markdown(result);
    if (format == "csv") return render_concurrency_csv(result);
    return render_concurrency_table(result, o.wide ? Width::Wide : Width::Fit);
}

}  // namespace kvplan
