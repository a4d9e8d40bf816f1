#include "report/roofline_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/units.hpp"
#include "report/json_value.hpp"
#include "report/printable.hpp"
#include "report/table.hpp"

namespace kvplan {

namespace {

std::string ms(double s) {
    return fmt::format("{:.2f}", s * 1e3);
}
std::string rate(double v) {
    return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.1f}", v);
}
std::string pct(double share) {
    return fmt::format("{:.1f}%", share * 100);
}
std::string tb_s(double v) {
    return fmt::format("{:.2f} TB/s", v / 1e12);
}
std::string tflop_s(double v) {
    return fmt::format("{:.1f} TFLOP/s", v / 1e12);
}
const char* bound_name(const StepCost& s) {
    return s.compute_bound ? "compute" : "memory";
}

std::string bytes(double b) {
    return binary_size(static_cast<std::int64_t>(b));
}

// What runs on what: model, device, TP, formats. Weights in GiB, as every other
// memory size kvplan prints.
std::string title(const RooflineResult& r) {
    const CostModel& m = r.cost;
    if (m.layout.active())
        return fmt::format("{} on {} x {} ({}), DP {} x TP {}, EP {}, weights {} ({} per GPU), KV {}", r.model_label, m.layout.gpus, r.gpu.name,
                           r.gpu.id, m.layout.dp, m.tp, m.layout.ep, r.weights_label, bytes(static_cast<double>(r.weights_per_gpu_bytes)),
                           dtype_name(m.kv_dtype));
    return fmt::format("{} on {} ({}), TP {}, weights {} ({} per GPU), KV {}", r.model_label, r.gpu.name, r.gpu.id, m.tp, r.weights_label,
                       bytes(m.weight_bytes_total / static_cast<double>(m.tp)), dtype_name(m.kv_dtype));
}

// The achievable figures the step is priced with.
std::string rates(const RooflineResult& r) {
    const CostModel& m = r.cost;
    std::string out;
    const Efficiency& e = r.efficiency;
    if (e.measured_bandwidth_bytes_per_s)
        out += fmt::format("achievable bandwidth {} (measured: {})", tb_s(m.bandwidth_bytes_per_s), e.calibration_source);
    // (a measured figure is used for weights and KV alike)
    else
        out += fmt::format(
            "achievable bandwidth {} streaming weights, {} streaming KV ({:.2f} and {:.2f} x {} datasheet {})", tb_s(m.weights_bandwidth_bytes_per_s),
            tb_s(m.bandwidth_bytes_per_s), m.weights_bandwidth_bytes_per_s / static_cast<double>(r.gpu.bandwidth_bytes_per_s),
            m.bandwidth_bytes_per_s / static_cast<double>(r.gpu.bandwidth_bytes_per_s), tb_s(static_cast<double>(r.gpu.bandwidth_bytes_per_s)),
            r.gpu.memory_technology.empty() ? "memory" : r.gpu.memory_technology);
    if (m.flops_per_s > 0) {
        if (e.measured_flops_per_s) out += fmt::format("; compute {} (measured)", tflop_s(m.flops_per_s));
        else out += fmt::format("; compute {} ({:.2f} x dense {} peak)", tflop_s(m.flops_per_s), m.flops_fraction, dtype_name(m.math_dtype));
    }
    out += fmt::format("; step overhead {} ms", ms(m.step_overhead_s));
    if (m.layer_overhead_s > 0) out += fmt::format(" + {} ms over the layers", ms(m.layer_overhead_s));
    if (m.engine != "generic") out += fmt::format(" ({} profile)", m.engine);
    return out;
}

bool has_a2a(const RooflineResult& r) {
    return r.cost.layout.ep > 1;
}

// The MoE dispatch backend in words (docs/collectives.md, "Expert-parallel dispatch").
std::string dispatch_words(const ExpertLayout& L) {
    if (L.ep < 2) return std::string();
    if (L.deepep)
        return fmt::format("; all-to-all {} dispatch, bf16 combine, {:.0f} + {:.0f} us per MoE layer at least (DeepEP)",
                           L.fp8_dispatch ? "fp8" : "bf16", L.dispatch_latency_s * 1e6, L.combine_latency_s * 1e6);
    if (L.dp < 2) return "; no dispatch: every rank holds every token, the TP all-reduce combines";
    return fmt::format("; dispatch by all-gather and reduce-scatter of bf16 hidden states over the {} DP ranks ({})", L.dp, L.gather.label);
}

// The layout line: which ranks split what, and what the batch axis counts.
std::string layout_line(const RooflineResult& r) {
    const ExpertLayout& L = r.cost.layout;
    const std::string experts =
        L.local_experts == 0 ? "no routed experts"
        : L.ep > 1           ? fmt::format("routed experts over EP {} ({} per GPU), expert imbalance {:.2f}", L.ep, L.local_experts, L.imbalance)
                             : "routed experts as tensor shards over every GPU (no EP)";
    const std::string nodes = L.nodes > 1 ? fmt::format("; {} nodes of {} GPUs, {} between them ({:.0f} GB/s a GPU per direction)", L.nodes,
                                                        L.gpus_per_node, L.nic, L.nic_bytes_per_s / 1e9)
                                          : std::string();
    const std::string overlap =
        L.overlap() ? fmt::format(
                          "; two-batch overlap from {} decode tokens a rank ({} with a prefill): two micro-batches, one's compute hiding "
                          "the other's all-to-all",
                          std::max<std::int64_t>(2, L.overlap_decode_tokens), std::max<std::int64_t>(2, L.overlap_prefill_tokens))
                    : std::string();
    return fmt::format(
        "Layout: {} DP ranks of attention TP {}; {}; "
        "batch = the replica's sequences, {} per DP rank at most; the step is the slowest rank's{}{}{}.",
        L.dp, r.cost.tp, experts, L.dp > 1 ? "batch / " + std::to_string(L.dp) : "all", dispatch_words(L), nodes, overlap);
}

Table rows_table(const RooflineResult& r) {
    const bool priced = r.inputs.price_per_hour.has_value();
    const bool a2a = has_a2a(r);
    std::vector<std::string> h{"batch", "step\n(ms)", "tok/s\nper user", "tok/s\ntotal", "bound", "KV share\nof bytes", "fits"};
    if (a2a) h.insert(h.begin() + 2, "a2a\n(ms)");
    if (priced) h.push_back("$ per M\ntokens");
    Table t(h, 0);
    for (const RooflineRow& row : r.roofline.rows) {
        std::vector<std::string> c{group_digits(row.batch), ms(row.step.total_s), rate(row.tokens_per_s_per_user), rate(row.tokens_per_s_total),
                                   bound_name(row.step),    pct(row.kv_share),    row.fits ? "yes" : "no"};
        if (a2a) c.insert(c.begin() + 2, ms(row.step.all_to_all_s));
        if (priced) c.push_back(row.usd_per_million_tokens ? fmt::format("{:.3f}", *row.usd_per_million_tokens) : "-");
        t.add(c);
    }
    return t;
}

// Speculative decoding, one row per batch: the step with K drafts, E, the
// tokens/s it keeps and the speed-up over plain decode at that batch.
std::string spec_heading(const RooflineResult& r) {
    const SpecInputs& s = *r.inputs.spec;
    std::string rates;
    for (double a : s.rates) rates += (rates.empty() ? "" : ",") + fmt::format("{:g}", a);
    std::string drafter = s.method == SpecMethod::Draft ? "draft model " + s.draft_label
                          : s.method == SpecMethod::Mtp ? "the model's MTP layer and LM head"
                                                        : "a one-layer EAGLE head of the model's shape and its LM head";
    return fmt::format("Speculative decoding ({}, K = {}, acceptance {}): {} tokens kept per step (E); drafts by {}:", spec_method_name(s.method),
                       s.k, rates, fmt::format("{:.3f}", r.roofline.spec_expected_tokens), drafter);
}

Table spec_table(const RooflineResult& r) {
    Table t({"batch", "spec step\n(ms)", "verify\n(ms)", "drafts\n(ms)", "E\n(tokens)", "tok/s\nper user", "tok/s\ntotal", "speed-up"}, 0);
    for (const RooflineRow& row : r.roofline.rows) {
        const SpecRow& s = *row.spec;
        t.add({group_digits(row.batch), ms(s.step.total_s), ms(s.step.verify.total_s), ms(s.step.draft_s), fmt::format("{:.3f}", s.expected_tokens),
               rate(s.tokens_per_s_per_user), rate(s.tokens_per_s_total), fmt::format("{:.2f}x", s.speedup)});
    }
    return t;
}

std::string spec_words(const RooflineResult& r) {
    if (r.roofline.spec_break_even_batch)
        return fmt::format(
            "Speculation stops paying at batch {} (speed-up below 1: the verify step's K + 1 tokens per sequence cost more than the tokens kept).",
            group_digits(*r.roofline.spec_break_even_batch));
    return "Speculation pays at every batch shown: it stops paying beyond the batches shown.";
}

constexpr const char* kStepFormula = "step = max(memory, compute) + overhead + all-reduce";
constexpr const char* kStepFormulaA2a = "step = max(memory, compute) + overhead + all-reduce + all-to-all";
// Fitted tables print it under the terms (two lines of 100 columns at most).
constexpr const char* kStepFormulaOverlap =
    "step = max(memory, compute) + overhead + all-reduce + all-to-all - hidden;\n"
    "  overlapped: overhead + 2 x max(max(memory, compute) + all-reduce, all-to-all) of one micro-batch";
const char* step_formula(const RooflineResult& r) {
    return r.cost.layout.overlap() ? kStepFormulaOverlap : has_a2a(r) ? kStepFormulaA2a : kStepFormula;
}

// Every term of the step at batch 1 and at the largest batch shown, with
// shares. Fitted, the last row is called "step" and the formula follows the table.
Table terms_table(const RooflineResult& r, Width width) {
    const RooflineRow& a = r.roofline.rows.front();
    const RooflineRow& b = r.roofline.rows.back();
    Table t({"term", fmt::format("batch {}", a.batch), "share", fmt::format("batch {}", b.batch), "share"});
    auto bytes_row = [&](const char* name, double x, double y) {
        t.add({name, bytes(x), pct(x / a.step.bytes()), bytes(y), pct(y / b.step.bytes())});
    };
    bytes_row("weights read", a.step.weight_bytes, b.step.weight_bytes);
    bytes_row("KV read", a.step.kv_read_bytes, b.step.kv_read_bytes);
    bytes_row("KV written", a.step.kv_write_bytes, b.step.kv_write_bytes);
    auto flops_row = [&](const char* name, double x, double y) {
        t.add({name, fmt::format("{:.3g} GFLOP", x / 1e9), pct(x / a.step.flops()), fmt::format("{:.3g} GFLOP", y / 1e9), pct(y / b.step.flops())});
    };
    flops_row("matmul FLOPs", a.step.matmul_flops, b.step.matmul_flops);
    flops_row("attention FLOPs", a.step.attention_flops, b.step.attention_flops);
    auto time_row = [&](const char* name, double x, double y) {
        t.add({name, ms(x) + " ms", pct(x / a.step.total_s), ms(y) + " ms", pct(y / b.step.total_s)});
    };
    time_row("memory time", a.step.memory_s, b.step.memory_s);
    time_row("compute time", a.step.compute_s, b.step.compute_s);
    time_row("fixed overhead", a.step.overhead_s, b.step.overhead_s);
    time_row("TP all-reduces", a.step.allreduce_s, b.step.allreduce_s);
    if (has_a2a(r)) time_row("EP all-to-alls", a.step.all_to_all_s, b.step.all_to_all_s);
    if (r.cost.layout.overlap()) time_row("hidden by overlap", -a.step.overlap_hidden_s, -b.step.overlap_hidden_s);
    std::string formula = step_formula(r);  // one line as a row label
    for (std::size_t at; (at = formula.find("\n  ")) != std::string::npos;) formula.replace(at, 3, " ");
    time_row(width == Width::Wide ? formula.c_str() : "step", a.step.total_s, b.step.total_s);
    return t;
}

std::vector<std::string> words(const RooflineResult& r) {
    const Roofline& f = r.roofline;
    const RooflineInputs& in = r.inputs;
    std::vector<std::string> out;
    if (f.kv_equals_weights_batch)
        out.push_back(
            fmt::format("KV reads equal weight reads at batch {} ({} tokens of context each); beyond it the cache, not the model, sets the step.",
                        group_digits(*f.kv_equals_weights_batch), group_digits(in.context)));
    if (f.compute_bound_batch) out.push_back(fmt::format("Compute takes over from memory at batch {}.", group_digits(*f.compute_bound_batch)));
    else if (r.cost.flops_per_s > 0) out.push_back("Decode stays memory-bound at every batch at this context: KV reads grow as fast as the FLOPs.");
    if (f.ceiling)
        out.push_back(
            fmt::format("Memory holds {} sequences of {} tokens: the throughput ceiling is {} tokens/s ({} ms per step, {} tokens/s per user).",
                        group_digits(*f.max_batch), group_digits(in.context), rate(f.ceiling->tokens_per_s_total), ms(f.ceiling->step.total_s),
                        rate(f.ceiling->tokens_per_s_per_user)));
    else if (f.max_batch) out.push_back(fmt::format("Not one sequence of {} tokens fits in memory on this configuration.", group_digits(in.context)));
    out.push_back(fmt::format("TTFT for a {}-token prompt: {} ms ({}-bound); end to end for {} in / {} out at batch 1: {:.2f} s.",
                              group_digits(in.prompt), ms(f.ttft_s), bound_name(f.prefill), group_digits(in.prompt), group_digits(in.output),
                              f.e2e_s));
    return out;
}

}  // namespace

std::string render_roofline_table(const RooflineResult& r, Width width) {
    std::string out = fit_line(title(r), width) + fit_line(rates(r), width);
    if (r.cost.layout.active()) out += fit_line(layout_line(r), width);
    out += fmt::format("\nDecode, {} tokens of context per sequence:\n", group_digits(r.inputs.context));
    out += rows_table(r).render_text(width) + "\n" + terms_table(r, width).render_text(width);
    if (width == Width::Fit) out += std::string("  ") + step_formula(r) + "\n";
    if (r.inputs.spec) {
        out += "\n" + fit_line(spec_heading(r), width) + spec_table(r).render_text(width);
        out += "  spec step = verify (K + 1 tokens each) + K draft passes; speed-up = E x plain step / spec step\n";
        out += fit_line(spec_words(r), width);
    }
    out += "\n";
    for (const std::string& w : words(r)) out += fit_line(w, width);
    if (!r.cost.notes.empty()) {
        out += "\nNotes:\n";
        for (const std::string& n : r.cost.notes) out += fit_line(n, width, "  - ", "    ");
    }
    return out;
}

std::string render_roofline_markdown(const RooflineResult& r) {
    std::string out = "### " + printable(title(r)) + "\n" + printable(rates(r)) + "\n" +
                      (r.cost.layout.active() ? layout_line(r) + "\n" : std::string()) + "\n" + rows_table(r).render_markdown() + "\n" +
                      terms_table(r, Width::Wide).render_markdown() + "\n";
    if (r.inputs.spec) out += spec_heading(r) + "\n\n" + spec_table(r).render_markdown() + "\n";
    for (const std::string& w : words(r)) out += "- " + printable(w) + "\n";
    if (r.inputs.spec) out += "- " + spec_words(r) + "\n";
    return out;
}

std::string render_roofline_csv(const RooflineResult& r) {
    // Leading columns name the run, so that CSVs of several runs can be concatenated.
    std::vector<std::string> h{"model",
                               "gpu",
                               "tp",
                               "weights",
                               "kv_dtype",
                               "batch",
                               "context_tokens",
                               "decode_step_s",
                               "tokens_per_s_per_user",
                               "tokens_per_s_total",
                               "bound",
                               "kv_share",
                               "fits",
                               "weight_bytes",
                               "kv_read_bytes",
                               "kv_write_bytes",
                               "flops",
                               "memory_s",
                               "compute_s",
                               "overhead_s",
                               "allreduce_s"};
    if (r.inputs.spec)
        for (const char* c : {"spec_step_s", "spec_verify_s", "spec_draft_s", "expected_tokens_per_step", "spec_tokens_per_s_per_user",
                              "spec_tokens_per_s_total", "spec_speedup"})
            h.push_back(c);
    const bool layout = r.cost.layout.active();
    if (layout)
        for (const char* c : {"dp", "ep", "expert_imbalance", "all_to_all_s", "all_to_all_bytes", "rank_sequences", "rank_expert_tokens"})
            h.push_back(c);
    Table t(h, 0);
    for (const RooflineRow& row : r.roofline.rows) {
        std::vector<std::string> c{r.model->name,
                                   r.gpu.id,
                                   std::to_string(r.cost.tp),
                                   r.weights_label,
                                   std::string(dtype_name(r.cost.kv_dtype)),
                                   std::to_string(row.batch),
                                   std::to_string(row.context),
                                   fmt::format("{:.9g}", row.step.total_s),
                                   fmt::format("{:.6g}", row.tokens_per_s_per_user),
                                   fmt::format("{:.6g}", row.tokens_per_s_total),
                                   bound_name(row.step),
                                   fmt::format("{:.6f}", row.kv_share),
                                   row.fits ? "true" : "false",
                                   fmt::format("{:.0f}", row.step.weight_bytes),
                                   fmt::format("{:.0f}", row.step.kv_read_bytes),
                                   fmt::format("{:.0f}", row.step.kv_write_bytes),
                                   fmt::format("{:.6g}", row.step.flops()),
                                   fmt::format("{:.9g}", row.step.memory_s),
                                   fmt::format("{:.9g}", row.step.compute_s),
                                   fmt::format("{:.9g}", row.step.overhead_s),
                                   fmt::format("{:.9g}", row.step.allreduce_s)};
        if (row.spec)
            for (double v : {row.spec->step.total_s, row.spec->step.verify.total_s, row.spec->step.draft_s, row.spec->expected_tokens,
                             row.spec->tokens_per_s_per_user, row.spec->tokens_per_s_total, row.spec->speedup})
                c.push_back(fmt::format("{:.9g}", v));
        if (layout) {
            const ExpertLayout& L = r.cost.layout;
            c.push_back(std::to_string(L.dp));
            c.push_back(std::to_string(L.ep));
            c.push_back(fmt::format("{:g}", L.imbalance));
            c.push_back(fmt::format("{:.9g}", row.step.all_to_all_s));
            c.push_back(fmt::format("{:.0f}", row.step.all_to_all_bytes));
            c.push_back(fmt::format("{:.0f}", row.step.rank_sequences));
            c.push_back(fmt::format("{:.6g}", row.step.rank_expert_tokens));
        }
        t.add(c);
    }
    return t.render_csv();
}

std::string render_roofline_json(const RooflineResult& r) {
    const Roofline& f = r.roofline;
    nlohmann::ordered_json j;
    j["gpu"] = r.gpu.id;
    j["model"] = r.model->name;
    j["tp"] = r.cost.tp;
    j["engine"] = r.cost.engine;
    j["weights_format"] = r.weights_label;
    j["kv_dtype"] = dtype_name(r.cost.kv_dtype);
    j["achievable_bandwidth_bytes_per_s"] = r.cost.weights_bandwidth_bytes_per_s;
    j["achievable_kv_bandwidth_bytes_per_s"] = r.cost.bandwidth_bytes_per_s;
    j["achievable_flops_per_s"] = r.cost.flops_per_s;
    j["calibrated"] = r.efficiency.measured_bandwidth_bytes_per_s.has_value();
    j["step_overhead_s"] = r.cost.step_overhead_s;
    j["layer_overhead_s"] = r.cost.layer_overhead_s;
    // Which source priced the TP all-reduce (docs/collectives.md); null at TP 1.
    j["allreduce_source"] = r.cost.tp > 1 ? nlohmann::ordered_json(r.cost.allreduce_source) : nlohmann::ordered_json(nullptr);
    j["context_tokens"] = r.inputs.context;
    j["prompt_tokens"] = r.inputs.prompt;
    j["output_tokens"] = r.inputs.output;
    j["ttft_s"] = f.ttft_s;
    j["e2e_s"] = f.e2e_s;
    j["kv_equals_weights_batch"] = or_null(f.kv_equals_weights_batch);
    j["compute_bound_batch"] = or_null(f.compute_bound_batch);
    j["max_batch"] = or_null(f.max_batch);
    if (r.inputs.price_per_hour) j["price_per_hour_usd"] = *r.inputs.price_per_hour;
    const ExpertLayout& L = r.cost.layout;
    if (L.active()) {
        nlohmann::ordered_json lj;
        lj["gpus"] = L.gpus;
        lj["dp"] = L.dp;
        lj["attention_tp"] = r.cost.tp;
        lj["ep"] = L.ep;
        lj["experts_per_gpu"] = L.local_experts;
        lj["expert_imbalance"] = L.imbalance;
        lj["weights_per_gpu_bytes"] = r.weights_per_gpu_bytes;
        lj["dispatch_bytes_per_token_copy"] = L.dispatch_bytes_per_copy;
        lj["combine_bytes_per_token_copy"] = L.combine_bytes_per_copy;
        lj["dispatch_latency_s"] = L.dispatch_latency_s;
        lj["combine_latency_s"] = L.combine_latency_s;
        lj["dispatch_backend"] = L.ep < 2 ? "none" : L.deepep ? "deepep-low-latency" : L.dp > 1 ? "allgather-reducescatter" : "none (TP all-reduce)";
        lj["dispatch_source"] = L.gather.label.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(L.gather.label);
        lj["nodes"] = L.nodes;
        lj["gpus_per_node"] = L.gpus_per_node;
        lj["nic"] = L.nodes > 1 ? nlohmann::ordered_json(L.nic) : nlohmann::ordered_json(nullptr);
        lj["nic_bytes_per_s"] = L.nodes > 1 ? nlohmann::ordered_json(L.nic_bytes_per_s) : nlohmann::ordered_json(nullptr);
        lj["batch_is"] = "the replica's sequences, spread over the DP ranks; the step is the slowest rank's";
        lj["two_batch_overlap"] = L.overlap();
        lj["overlap_decode_tokens"] =
            L.overlap() ? nlohmann::ordered_json(std::max<std::int64_t>(2, L.overlap_decode_tokens)) : nlohmann::ordered_json(nullptr);
        lj["overlap_prefill_tokens"] =
            L.overlap() ? nlohmann::ordered_json(std::max<std::int64_t>(2, L.overlap_prefill_tokens)) : nlohmann::ordered_json(nullptr);
        j["layout"] = lj;
    }
    j["rows"] = nlohmann::ordered_json::array();
    for (const RooflineRow& row : f.rows) {
        nlohmann::ordered_json x;
        x["batch"] = row.batch;
        x["context_tokens"] = row.context;
        x["decode_step_s"] = row.step.total_s;
        x["tokens_per_s_per_user"] = row.tokens_per_s_per_user;
        x["tokens_per_s_total"] = row.tokens_per_s_total;
        x["bound"] = bound_name(row.step);
        x["kv_share"] = row.kv_share;
        x["fits"] = row.fits;
        x["weight_bytes"] = row.step.weight_bytes;
        x["kv_read_bytes"] = row.step.kv_read_bytes;
        x["kv_write_bytes"] = row.step.kv_write_bytes;
        x["flops"] = row.step.flops();
        x["memory_s"] = row.step.memory_s;
        x["compute_s"] = row.step.compute_s;
        x["overhead_s"] = row.step.overhead_s;
        x["allreduce_s"] = row.step.allreduce_s;
        if (L.active()) {
            x["all_to_all_s"] = row.step.all_to_all_s;
            x["all_to_all_bytes"] = row.step.all_to_all_bytes;
            x["all_to_all_nic_bytes"] = row.step.all_to_all_nic_bytes;
            x["two_batch_overlap"] = row.step.overlapped;
            x["overlap_hidden_s"] = row.step.overlap_hidden_s;
            x["rank_sequences"] = row.step.rank_sequences;
            x["rank_expert_tokens"] = row.step.rank_expert_tokens;
            x["experts_read_per_layer"] = row.step.experts_read;
        }
        if (row.usd_per_million_tokens) x["usd_per_million_tokens"] = *row.usd_per_million_tokens;
        if (row.spec) {
            nlohmann::ordered_json sp;
            sp["spec_step_s"] = row.spec->step.total_s;
            sp["verify_s"] = row.spec->step.verify.total_s;
            sp["draft_s"] = row.spec->step.draft_s;
            sp["expected_tokens_per_step"] = row.spec->expected_tokens;
            sp["tokens_per_s_per_user"] = row.spec->tokens_per_s_per_user;
            sp["tokens_per_s_total"] = row.spec->tokens_per_s_total;
            sp["spec_speedup"] = row.spec->speedup;
            x["spec"] = sp;
        }
        j["rows"].push_back(x);
    }
    if (r.inputs.spec) {
        nlohmann::ordered_json sp;
        sp["method"] = spec_method_name(r.inputs.spec->method);
        sp["spec_tokens"] = r.inputs.spec->k;
        sp["acceptance_rates"] = r.inputs.spec->rates;
        sp["expected_tokens_per_step"] = f.spec_expected_tokens;
        if (r.inputs.spec->method == SpecMethod::Draft) sp["draft_model"] = r.inputs.spec->draft_label;
        sp["break_even_batch"] = or_null(f.spec_break_even_batch);
        j["spec"] = sp;
    }
    j["notes"] = r.cost.notes;
    return json_text(j);
}

}  // namespace kvplan
