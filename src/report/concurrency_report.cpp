#include "report/concurrency_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/units.hpp"
#include "report/engine_log.hpp"
#include "report/json_value.hpp"
#include "report/printable.hpp"
#include "report/table.hpp"

namespace kvplan {

namespace {

std::string gib2(std::int64_t bytes) {
    return fmt::format("{:.2f}", static_cast<double>(bytes) / 1073741824.0);
}

std::string signed_bytes(std::int64_t bytes) {
    return bytes < 0 ? "-" + group_digits(-bytes) : group_digits(bytes);
}

std::string percent(double share) {
    return fmt::format("{:.1f}%", share * 100.0);
}

// "1 GPU", "8 GPUs (TP 2 x PP 1, 4 replicas)"
std::string layout_text(const CapacityPlan& p) {
    std::string out = fmt::format("{} GPU{} (TP {}, PP {}", p.gpus, p.gpus == 1 ? "" : "s", p.tp, p.pp);
    if (p.scale_out)
        out = p.scale_out->rules == ScaleOutRules::Vllm
                  ? fmt::format("{} GPU{} (DP {} x TP {}, EP {}, PP {}", p.gpus, p.gpus == 1 ? "" : "s", p.scale_out->dp, p.tp, p.scale_out->ep, p.pp)
                  : fmt::format("{} GPU{} (TP {} = DP {} x attention TP {}, EP {}, PP {}", p.gpus, p.gpus == 1 ? "" : "s", p.tp, p.scale_out->dp,
                                p.scale_out->attention_tp, p.scale_out->ep, p.pp);
    if (p.replicas > 1) out += fmt::format(", {} data-parallel replicas", p.replicas);
    return out + ")";
}

std::string device_text(const Gpu& g) {
    if (!g.from_database) return g.name;
    return g.name + " (" + g.id + ")";
}

std::string header(const ConcurrencyResult& r) {
    const CapacityPlan& p = r.plan;
    // The names escaped here: the header's own lines are split at '\n' below.
    std::string out = fmt::format("{} on {}\n", printable(r.model_label), printable(device_text(p.gpu)));
    const std::string weights = p.weights_quantization == QuantMethod::None ? std::string(dtype_name(p.weights_dtype))
                                                                            : std::string(quant_method_name(p.weights_quantization)) + "-quantized";
    out += fmt::format("{}, {}, KV dtype {}, weights {} ({} in all)", engine_label(p.engine), layout_text(p), dtype_name(p.kv_dtype), weights,
                       binary_size(p.model_weights_bytes));
    if (r.placement)
        out += fmt::format("\nplaced on {} node{} of {} GPUs{}", r.placement->nodes, r.placement->nodes == 1 ? "" : "s", r.placement->gpus_per_node,
                           r.placement->tp_spans_nodes ? "; warning: attention TP spans nodes, its all-reduces cross the NIC" : "");
    // Two lines, so that the header fits 100 columns.
    if (p.allocation == Allocation::Contiguous) out += fmt::format("\ncontiguous allocation of {} tokens per request", group_digits(p.max_tokens));
    else out += fmt::format("\n{}-token blocks", group_digits(p.block_size));
    // SGLang's DP attention divides its chunked prefill over the ranks (server_args.py, _handle_data_parallelism).
    const std::int64_t dp = p.scale_out ? p.scale_out->dp : 1;
    const std::string per_rank =
        p.engine == Engine::Sglang && dp > 1 ? fmt::format(" ({} a DP rank)", group_digits(p.max_batched_tokens / dp)) : std::string();
    out += fmt::format(", max_model_len {}, {} batched tokens{}\n", group_digits(p.max_model_len), group_digits(p.max_batched_tokens), per_rank);
    return out;
}

Table budget_table(const CapacityPlan& p) {
    Table t({"memory budget, one GPU", "bytes", "GiB"});
    for (const BudgetLine& l : p.budget.lines) {
        std::string label = l.op == ' ' ? l.label : std::string(1, l.op) + " " + l.label;
        if (l.fraction) label += fmt::format(" {:.2f}{}", *l.fraction, l.of_free_memory ? " of free memory" : "");
        t.add({label, signed_bytes(l.bytes), gib2(l.bytes)});
    }
    return t;
}

// How one part is split on a GPU: "32 of 256 experts (EP 8)", "/ 8", "whole".
std::string split_text(const WeightShare& w, const ScaleOut& so) {
    if (w.part == ParamPart::Experts && so.ep > 1) {
        std::string out = fmt::format("{} of {} experts (EP {})", so.experts_per_gpu, so.routed_experts, so.ep);
        if (so.physical_experts > so.routed_experts)
            out = fmt::format("{} of {}+{} experts (EP {})", so.experts_per_gpu, so.routed_experts, so.physical_experts - so.routed_experts, so.ep);
        return so.expert_tp > 1 ? out + fmt::format(", / {}", so.expert_tp) : out;
    }
    if (w.divisor > 1 && w.capped_bytes > 0) return fmt::format("/ {}, some replicated", w.divisor);
    return w.divisor > 1 ? fmt::format("/ {}", w.divisor) : std::string("whole");
}

// Where each split comes from, in the engine's own code.
std::vector<std::string> split_sources(const ScaleOut& so) {
    if (so.rules == ScaleOutRules::Vllm)
        return {
            "routed experts: vllm/model_executor/layers/fused_moe/config.py FusedMoEParallelConfig.make (EP = TP x DP, "
            "or each expert over TP x DP without --enable-expert-parallel)",
            "attention, mlp, shared_experts, embeddings, lm_head: the TP group of one DP rank (QKV/RowParallelLinear, "
            "VocabParallelEmbedding, ParallelLMHead)",
            "router, norms, MLA's q_a_proj and kv_a_proj_with_mqa: ReplicatedLinear (fused_qkv_a_proj disable_tp=True) / RMSNorm, "
            "whole on every GPU; K/V: one whole KV head a GPU when TP exceeds the KV heads (QKVParallelLinear)"};
    if (so.rules == ScaleOutRules::Trtllm)
        return {
            "attention: enable_attention_dp, each GPU its own rank, every GEMM weight replicated (TensorRT-LLM "
            "docs/source/features/parallel-strategy.md)",
            "routed experts: moe_expert_parallel_size x moe_tensor_parallel_size = tensor_parallel_size (tensorrt_llm/mapping.py)",
            "mlp, shared_experts: GatedMLP(overridden_tp_size=1) under attention DP (_torch/models/modeling_deepseekv3.py)",
            "embeddings: DeepseekV3Model's Embedding without a mapping; lm_head: whole under attention DP "
            "(enable_lm_head_tp_in_adp not modelled)",
            "router, norms: whole on every GPU"};
    return {"attention: python/sglang/srt/layers/dp_attention.py compute_dp_attention_world_info (attn_tp_size = tp / dp)",
            "routed experts: server_args.py (moe_tp_size = tp / ep; deepep sets ep = tp)",
            "mlp: models/deepseek_v2.py DeepseekV2DecoderLayer (tp 1 when moe_dense_tp_size is 1, else the full TP)",
            "shared_experts: DeepseekV2MoE (tp 1 under the deepep backend, else the full TP)",
            "embeddings: VocabParallelEmbedding(enable_tp=not is_dp_attention_enabled()); lm_head: ParallelLMHead over the full TP",
            "router, norms, MLA's fused_qkv_a_proj_with_mqa (ReplicatedLinear): whole on every GPU; K/V: one whole KV head a GPU "
            "when TP exceeds the KV heads (QKVParallelLinear)"};
}

Table weights_table(const CapacityPlan& p) {
    Table t({"weights on one GPU", "split", "bytes", "GiB"}, 2);
    for (const WeightShare& w : p.stage_weights->shares)
        t.add({param_part_name(w.part), split_text(w, *p.scale_out), group_digits(w.bytes), gib2(w.bytes)});
    t.add({"= routed experts", "", group_digits(p.stage_weights->expert_bytes), gib2(p.stage_weights->expert_bytes)});
    t.add({"= dense (every other part)", "", group_digits(p.stage_weights->dense_bytes), gib2(p.stage_weights->dense_bytes)});
    return t;
}

std::string weights_text(const CapacityPlan& p, Width width) {
    if (!p.stage_weights || !p.scale_out) return "";
    std::string out = "\n" + weights_table(p).render_text(width) + "  sources:\n";
    for (const std::string& line : split_sources(*p.scale_out)) out += wrap_text(line, 100, "    ", "      ");
    return out;
}

Table overhead_table(const CapacityPlan& p) {
    Table t({"overhead term", "basis", "bytes", "range (GiB)", "in pool"}, 2);
    for (const OverheadTerm& o : p.budget.overhead)
        t.add({o.name, o.basis, signed_bytes(o.bytes), gib2(o.low_bytes) + " .. " + gib2(o.high_bytes), o.in_pool ? "yes" : "no"});
    return t;
}

// The overhead terms for a terminal: the table without its long basis
// column, then each term's basis on lines of at most 100 columns.
std::string overhead_text(const CapacityPlan& p) {
    Table t({"overhead term", "bytes", "range (GiB)", "in pool"}, 1);
    for (const OverheadTerm& o : p.budget.overhead)
        t.add({o.name, signed_bytes(o.bytes), gib2(o.low_bytes) + " .. " + gib2(o.high_bytes), o.in_pool ? "yes" : "no"});
    std::string out = t.render_text() + "  basis:\n";
    for (const OverheadTerm& o : p.budget.overhead) out += wrap_text(o.name + ": " + o.basis, 100, "    ", "      ");
    return out;
}

Table contexts_table(const CapacityPlan& p) {
    const bool contiguous = p.allocation == Allocation::Contiguous;
    const bool prefix = p.prefix_tokens > 0 && !contiguous;
    // The '\n's let the fitted text table stack its headers (io/table.hpp).
    std::vector<std::string> headers{"context", p.scale_out ? "per DP\nrank" : "max\nrequests"};
    if (p.scale_out) headers.push_back(fmt::format("all {} DP\nranks", p.scale_out->dp));
    if (p.replicas > 1) headers.push_back("all\nreplicas");
    headers.push_back(contiguous ? "reserved/\nrequest" : "KV/request\n(one GPU)");
    if (contiguous) {
        headers.push_back("used/\nrequest");
        headers.push_back("reserved,\nunused");
        headers.push_back("reserved/\nused");
    }
    headers.push_back("KV share\nof memory");
    if (prefix) headers.push_back(fmt::format("with {}-token\nshared prefix", group_digits(p.prefix_tokens)));
    Table t(headers, 0);
    for (const ContextRow& row : p.rows) {
        std::vector<std::string> cells{group_digits(row.context_tokens), group_digits(row.max_requests)};
        if (p.scale_out) cells.push_back(group_digits(row.max_requests_replica));
        if (p.replicas > 1) cells.push_back(group_digits(row.max_requests_total));
        cells.push_back(binary_size(row.kv_bytes_per_request));
        if (contiguous) {
            cells.push_back(binary_size(row.used_bytes_per_request));
            cells.push_back(binary_size(row.unused_bytes));
            cells.push_back(row.used_bytes_per_request > 0 ? fmt::format("{:.1f}x", static_cast<double>(row.reserved_bytes_per_request) /
                                                                                        static_cast<double>(row.used_bytes_per_request))
                                                           : "-");
        }
        cells.push_back(percent(row.kv_memory_share));
        if (prefix) {
            const std::int64_t with = row.max_requests_with_prefix.value_or(row.max_requests);
            cells.push_back(fmt::format("{} (+{})", group_digits(with), group_digits(with - row.max_requests)));
        }
        t.add(cells);
    }
    return t;
}

std::string pool_line(const CapacityPlan& p) {
    std::string out = p.kv_bytes_per_token_per_gpu > 0 ? fmt::format("KV per token per GPU: {} B ({})", group_digits(p.kv_bytes_per_token_per_gpu),
                                                                     binary_size(p.kv_bytes_per_token_per_gpu))
                                                       : std::string("KV per token per GPU: none (recurrent state only, a fixed size per request)");
    if (p.num_blocks && p.kv_cache_tokens)
        out += fmt::format("; KV cache: {} blocks, {} tokens", group_digits(*p.num_blocks), group_digits(*p.kv_cache_tokens));
    if (p.scale_out && p.kv_cache_tokens_total)
        out += fmt::format(" per DP rank,\n{} tokens over the {} DP ranks", group_digits(*p.kv_cache_tokens_total), p.scale_out->dp);
    return out + "\n";
}

// The CPU tier's line (--cpu-offload), or nothing.
std::string cpu_tier_line(const ConcurrencyResult& r) {
    if (!r.cpu_tier) return "";
    const CpuTierSummary& c = *r.cpu_tier;
    const std::int64_t all = c.bytes_per_rank * c.ranks;
    std::string out = fmt::format("CPU KV tier (--cpu-offload {}): {} blocks, {} tokens\nhost memory it takes: {} ({})", c.size,
                                  group_digits(c.blocks), group_digits(c.tokens), binary_size(all), decimal_size(all));
    if (c.ranks > 1) out += fmt::format(", {} on each of {} ranks", binary_size(c.bytes_per_rank), c.ranks);
    return out + "\n";
}

// The flag users change first when a plan does not fit: the longest
// --max-model-len for one request and for a full batch of --max-num-seqs.
std::string longest_len_text(const CapacityPlan& p) {
    if (!p.longest_len_one_request || !p.longest_len_max_num_seqs) return "";
    auto len = [&](std::int64_t n) {
        if (n == 0) return std::string("none (not one token fits)");
        return group_digits(n) + " tokens" + (n >= p.length_limit ? " (the model's limit)" : "");
    };
    return fmt::format("Longest --max-model-len for one request: {};\nfor {} requests (--max-num-seqs): {}.\n", len(*p.longest_len_one_request),
                       group_digits(p.max_num_seqs), len(*p.longest_len_max_num_seqs));
}

std::string not_fit_text(const CapacityPlan& p) {
    if (p.fits) return "";
    std::string out;
    if (p.budget.kv_pool_bytes <= 0) out = fmt::format("Nothing fits: weights and overhead leave no KV pool ({} GiB).", gib2(p.budget.kv_pool_bytes));
    else out = "Not even one request of the longest context fits.";
    if (p.smallest_tp) out += fmt::format(" The smallest TP that fits is {} ({} GPUs per replica).", *p.smallest_tp, *p.smallest_tp * p.pp);
    else if (p.tp_searched) out += " No TP up to 64 fits; add pipeline stages, quantize, or pick a device with more memory.";
    return out + "\n";
}

std::vector<std::string> notes(const CapacityPlan& p) {
    std::vector<std::string> out;
    for (const std::string& w : p.warnings) out.push_back("warning: " + w);
    out.insert(out.end(), p.notes.begin(), p.notes.end());
    if (!p.gpu.cuda_total_bytes && p.gpu.from_database)
        out.push_back("no published CUDA-visible total for this device: the budget starts from the driver's figure, a few hundred MiB high");
    return out;
}

// Every line of `text` through fit_line.
std::string fit_lines(const std::string& text, Width width) {
    std::string out;
    for (std::size_t start = 0; start < text.size();) {
        const std::size_t end = text.find('\n', start);
        out += fit_line(text.substr(start, end - start), width);
        start = end == std::string::npos ? text.size() : end + 1;
    }
    return out;
}

}  // namespace

std::string answer_sentence(const ConcurrencyResult& r) {
    const CapacityPlan& p = r.plan;
    std::string who = p.gpus == 1 ? "one " + p.gpu.name : fmt::format("{} x {}", p.gpus, p.gpu.name);
    std::string verb = p.gpus == 1 ? "holds" : "hold";
    std::string out;
    for (std::size_t i = 0; i < p.rows.size(); ++i) {
        const ContextRow& row = p.rows[i];
        if (i == 0)
            out = fmt::format("At {} tokens {} {} {} request{} of {}", group_digits(row.context_tokens), who, verb,
                              group_digits(row.max_requests_total), row.max_requests_total == 1 ? "" : "s", r.model->name);
        else out += fmt::format("; at {}, {}", group_digits(row.context_tokens), group_digits(row.max_requests_total));
    }
    return out + ".";
}

std::string render_concurrency_table(const ConcurrencyResult& r, Width width) {
    const CapacityPlan& p = r.plan;
    std::string out = fit_lines(header(r), width) + "\n" + budget_table(p).render_text(width);
    // A given pool replaces the budget, overhead included: its terms would explain nothing.
    if (!p.budget.overhead.empty() && !p.budget.kv_pool_given)
        out += "\n" + (width == Width::Wide ? overhead_table(p).render_text(Width::Wide) : overhead_text(p));
    out += weights_text(p, width);
    out += "\n" + fit_lines(pool_line(p) + cpu_tier_line(r), width) + "\n" + contexts_table(p).render_text(width) + "\n" +
           fit_line(answer_sentence(r), width) + fit_lines(longest_len_text(p), width);
    out += fit_lines(not_fit_text(p), width);
    if (const std::vector<std::string> log = engine_log_lines(p); !log.empty()) {
        out += fmt::format("\n{} would log:\n", engine_label(p.engine));
        for (const std::string& l : log) out += fit_line(l, width, "  ", "    ");
    }
    std::vector<std::string> n = notes(p);
    if (!n.empty()) {
        out += "\nNotes:\n";
        for (const std::string& line : n) out += fit_line(line, width, "  - ", "    ");
    }
    return out;
}

std::string render_concurrency_markdown(const ConcurrencyResult& r) {
    const CapacityPlan& p = r.plan;
    std::string out = "### " + printable(r.model_label + " on " + device_text(p.gpu)) + "\n\n" + header(r).substr(header(r).find('\n') + 1) + "\n";
    out += budget_table(p).render_markdown() + "\n";
    if (!p.budget.overhead.empty() && !p.budget.kv_pool_given) out += overhead_table(p).render_markdown() + "\n";
    if (p.stage_weights && p.scale_out) {
        out += weights_table(p).render_markdown() + "\n";
        for (const std::string& line : split_sources(*p.scale_out)) out += "- " + line + "\n";
        out += "\n";
    }
    out += pool_line(p) + cpu_tier_line(r) + "\n";
    out += contexts_table(p).render_markdown() + "\n" + printable(answer_sentence(r)) + "\n" + longest_len_text(p);
    std::string nf = not_fit_text(p);
    if (!nf.empty()) out += "\n" + nf;
    if (const std::vector<std::string> log = engine_log_lines(p); !log.empty()) {
        out += fmt::format("\n{} would log:\n\n```\n", engine_label(p.engine));
        for (const std::string& l : log) out += printable(l) + "\n";
        out += "```\n";
    }
    const std::vector<std::string> n = notes(p);
    for (const std::string& line : n) out += "\n- " + printable(line);
    if (!n.empty()) out += "\n";
    return out;
}

std::string render_concurrency_csv(const ConcurrencyResult& r) {
    const CapacityPlan& p = r.plan;
    // Leading columns name the run, so that CSVs of several runs can be concatenated.
    Table t({"model", "gpu", "engine", "tp", "pp", "kv_dtype", "context_tokens", "max_requests", "max_requests_all_replicas", "kv_bytes_per_request",
             "kv_memory_fraction", "kv_pool_bytes", "kv_cache_tokens", "weights_bytes_per_gpu", "overhead_bytes"},
            0);
    const std::string gpu = p.gpu.from_database ? p.gpu.id : p.gpu.name;
    for (const ContextRow& row : p.rows)
        t.add({r.model->name, gpu, engine_name(p.engine), std::to_string(p.tp), std::to_string(p.pp), std::string(dtype_name(p.kv_dtype)),
               std::to_string(row.context_tokens), std::to_string(row.max_requests), std::to_string(row.max_requests_total),
               std::to_string(row.kv_bytes_per_request), fmt::format("{:.6f}", row.kv_memory_share), std::to_string(p.budget.kv_pool_bytes),
               p.kv_cache_tokens ? std::to_string(*p.kv_cache_tokens) : "", std::to_string(p.budget.weights_bytes),
               std::to_string(p.budget.overhead_bytes)});
    return t.render_csv();
}

std::string render_concurrency_json(const ConcurrencyResult& r) {
    const CapacityPlan& p = r.plan;
    nlohmann::ordered_json j;
    j["model"] = r.model->name;
    j["gpu"] = p.gpu.from_database ? p.gpu.id : p.gpu.name;
    j["gpu_memory_bytes"] = p.budget.total_bytes;
    j["gpu_driver_memory_bytes"] = p.gpu.memory_bytes;
    j["engine"] = engine_name(p.engine);
    j["gpus"] = p.gpus;
    j["tp"] = p.tp;
    j["pp"] = p.pp;
    j["replicas"] = p.replicas;
    if (p.scale_out) {
        j["dp"] = p.scale_out->dp;
        j["ep"] = p.scale_out->ep;
        j["attention_tp"] = p.scale_out->attention_tp;
        j["experts_per_gpu"] = p.scale_out->experts_per_gpu;
        if (r.placement) {  // only with --nodes / --gpus-per-node
            j["nodes"] = r.placement->nodes;
            j["gpus_per_node"] = r.placement->gpus_per_node;
        }
    }
    j["mem_util"] = p.budget.mem_fraction;
    j["weights_bytes_per_gpu"] = p.budget.weights_bytes;
    if (p.scale_out && p.stage_weights) {
        j["expert_weights_bytes_per_gpu"] = p.stage_weights->expert_bytes;
        j["dense_weights_bytes_per_gpu"] = p.stage_weights->dense_bytes;
        j["weight_parts_per_gpu"] = nlohmann::ordered_json::array();
        for (const WeightShare& w : p.stage_weights->shares) {
            nlohmann::ordered_json t;
            t["part"] = param_part_name(w.part);
            t["bytes"] = w.bytes;
            t["stage_bytes"] = w.stage_bytes;
            t["divisor"] = w.divisor;
            t["replicated_stage_bytes"] = w.capped_bytes;
            j["weight_parts_per_gpu"].push_back(t);
        }
    }
    j["overhead_bytes"] = p.budget.overhead_bytes;
    j["overhead_terms"] = nlohmann::ordered_json::array();
    for (const OverheadTerm& o : p.budget.overhead) {
        nlohmann::ordered_json t;
        t["name"] = o.name;
        t["bytes"] = o.bytes;
        t["low_bytes"] = o.low_bytes;
        t["high_bytes"] = o.high_bytes;
        t["in_pool"] = o.in_pool;
        t["basis"] = o.basis;
        t["source"] = o.source;
        j["overhead_terms"].push_back(t);
    }
    j["kv_pool_bytes"] = p.budget.kv_pool_bytes;
    j["kv_dtype"] = dtype_name(p.kv_dtype);
    j["weights_dtype"] = dtype_name(p.weights_dtype);
    j["kv_bytes_per_token_per_gpu"] = p.kv_bytes_per_token_per_gpu;
    j["allocation"] = p.allocation == Allocation::Contiguous ? "contiguous" : "paged";
    j["block_size_tokens"] = p.block_size;
    j["max_model_len_tokens"] = p.max_model_len;
    j["max_num_batched_tokens"] = p.max_batched_tokens;
    j["num_blocks"] = or_null(p.num_blocks);
    j["kv_cache_tokens"] = or_null(p.kv_cache_tokens);
    j["cpu_kv_cache_tokens"] = r.cpu_tier ? nlohmann::ordered_json(r.cpu_tier->tokens) : nlohmann::ordered_json(nullptr);
    if (p.scale_out) j["kv_cache_tokens_total"] = or_null(p.kv_cache_tokens_total);
    j["longest_max_model_len_one_request_tokens"] = or_null(p.longest_len_one_request);
    j["longest_max_model_len_max_num_seqs_tokens"] = or_null(p.longest_len_max_num_seqs);
    j["prefix_tokens"] = p.prefix_tokens;
    j["contexts"] = nlohmann::ordered_json::array();
    for (const ContextRow& row : p.rows) {
        nlohmann::ordered_json c;
        c["context_tokens"] = row.context_tokens;
        c["max_requests"] = row.max_requests;
        c["kv_bytes_per_request"] = row.kv_bytes_per_request;
        if (p.scale_out) c["max_requests_all_dp_ranks"] = row.max_requests_replica;
        c["max_requests_all_replicas"] = row.max_requests_total;
        c["kv_memory_fraction"] = row.kv_memory_share;
        if (row.max_requests_with_prefix) c["max_requests_with_prefix"] = *row.max_requests_with_prefix;
        if (p.allocation == Allocation::Contiguous) {
            c["reserved_bytes_per_request"] = row.reserved_bytes_per_request;
            c["used_bytes_per_request"] = row.used_bytes_per_request;
            c["unused_bytes"] = row.unused_bytes;
        }
        j["contexts"].push_back(c);
    }
    j["fits"] = p.fits;
    j["smallest_tp_that_fits"] = or_null(p.smallest_tp);
    if (const std::vector<std::string> log = engine_log_lines(p); !log.empty()) j["engine_log_lines"] = log;
    j["answer"] = answer_sentence(r);
    j["notes"] = notes(p);
    return json_text(j);
}

std::string render_vllm_releases() {
    std::string out = "vLLM releases kvplan models (--vllm-version), with what their start-up subtracts:\n";
    std::string previous;
    for (const std::string& series : known_vllm_series()) {
        const VllmRelease r = parse_vllm_release(series);
        const VllmReleaseRules rules = vllm_release_rules(r);
        std::string rule = rules.sampler == VllmSampler::Triton ? "Triton sampler" : "PyTorch-sort sampler";
        if (r.minor == 16) rule = "PyTorch-sort sampler (0.16.0), Triton sampler (0.16.1 on)";
        if (rules.graph_profile == VllmGraphProfile::ProfiledDiscarded) rule += "; CUDA-graph profile inside memory_profiling (residue)";
        if (rules.graph_profile == VllmGraphProfile::EstimateSubtracted) rule += "; CUDA-graph estimate subtracted (pass it with --overhead)";
        out += "  " + series + "  " + rule + "\n";
    }
    return out;
}

}  // namespace kvplan
