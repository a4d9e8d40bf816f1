#include "report/slo_report.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/digits.hpp"
#include "core/model/weight_format.hpp"
#include "report/display_width.hpp"
#include "report/json_value.hpp"
#include "report/printable.hpp"
#include "report/table.hpp"

namespace kvplan {

namespace {

std::string ms(double s) {
    return fmt::format("{:.1f}", s * 1e3);
}
std::string sec(double s) {
    return fmt::format("{:.2f}", s);
}
std::string money(const std::optional<double>& usd, const char* f = "{:.3f}") {
    return usd ? fmt::format(fmt::runtime(f), *usd) : "-";
}
std::string rate(double rps) {
    return fmt::format("{:.2f}", rps);
}

// "TTFT <= 2000.0 ms, TPOT <= 50.0 ms for 99% of requests".
std::string targets(const SloRecommendResult& r) {
    std::string out;
    auto add = [&](const char* name, const std::optional<double>& v) {
        if (v) out += (out.empty() ? "" : ", ") + fmt::format("{} <= {} ms", name, ms(*v));
    };
    add("TTFT", r.slo.ttft_s);
    add("TPOT", r.slo.tpot_s);
    add("E2E", r.slo.e2e_s);
    return out + fmt::format(" for {:g}% of requests", r.goodput * 100);
}

// The knob setting, and the KV dtype and weight format when the search tried more than one.
std::string knobs(const SloRecommendResult& r, const SloCandidate& c) {
    std::string out = c.pd() ? fmt::format("{}P:{}D", c.prefill_replicas, c.decode_replicas) : c.knobs;
    if (r.kv_axis) out += ", kv " + c.kv_dtype_flag;
    if (r.weights_axis) out += ", w " + c.weights_flag;
    return out;
}

// One side of a unit in words: "TP 2", or "DP 8 + EP 8" for DP attention + EP groups.
std::string side_words(std::int64_t tp, std::int64_t dp) {
    return dp > 1 ? fmt::format("DP {} + EP {}", dp, dp) : fmt::format("TP {}", tp);
}

// One side of a unit in the tp column: "2", or "1 ep8" for DP 8 + EP 8
// groups of TP 1, as the aggregated layouts' rows write them.
std::string side_cell(std::int64_t tp, std::int64_t dp) {
    return dp > 1 ? fmt::format("{} ep{}", tp, dp) : std::to_string(tp);
}

}  // namespace

std::string unit_sides(const SloCandidate& c) {
    if (c.prefill_dp <= 1 && c.dp <= 1) return fmt::format("{} TP {}/{}", c.gpu, c.prefill_tp, c.tp);
    return fmt::format("{} {}/{}", c.gpu, side_words(c.prefill_tp, c.prefill_dp), side_words(c.tp, c.dp));
}

namespace {

// A unit's TP is its prefill side's and its decode side's.
// A pipeline's, its stages' TP and the stage count.
std::string tp_text(const SloCandidate& c) {
    if (c.pd()) return side_cell(c.prefill_tp, c.prefill_dp) + "/" + side_cell(c.tp, c.dp);
    if (c.dp > 1) return fmt::format("{} ep{}", c.tp, c.dp);
    return c.pp > 1 ? fmt::format("{} pp{}", c.tp, c.pp) : std::to_string(c.tp);
}

std::string layout(const SloRecommendResult& r, const SloCandidate& c) {
    if (c.pd()) return fmt::format("{} ({})", unit_sides(c), knobs(r, c));
    const std::string tp = c.pp > 1 ? fmt::format("{} PP {}", c.tp, c.pp) : c.dp > 1 ? fmt::format("{} DP {} + EP {}", c.tp, c.dp, c.dp) : tp_text(c);
    return fmt::format("{} TP {} ({})", c.gpu, tp, knobs(r, c));
}

// The engine flags for a candidate's weight format (the checkpoint's, a quantization on load, or a what-if note).
ServeOptions serve_for(const SloRecommendResult& r, const SloCandidate& c) {
    RecommendResult base = r.base;
    base.inputs.weights = parse_weight_format("--weights-dtype", c.weights_flag);
    return serve_options(base);
}

// The notes of the first format, then any that the candidates shown add.
std::vector<std::string> notes(const SloRecommendResult& r) {
    std::vector<std::string> out = serve_options(r.base).notes;
    for (std::size_t i = 0; i < r.candidates.size() && i < r.top; ++i)
        for (const std::string& n : serve_for(r, r.candidates[i]).notes)
            if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    return out;
}

// The rate with the step model at the slow and the fast end of its band
// ("0" where no rate holds there); "-" without one.
std::string band_text(const SloCandidate& c) {
    if (!c.band) return "-";
    const auto end = [](double rps) { return rps > 0 ? fmt::format("{:.1f}", rps) : std::string("0"); };
    return end(c.band->low_rps) + "-" + end(c.band->high_rps);
}

// The rows of the candidates shown: at most --top, best first.
std::vector<SloRow> shown_rows(const SloRecommendResult& r) {
    std::vector<SloRow> out;
    for (std::size_t i = 0; i < r.candidates.size() && i < r.top; ++i) out.push_back({&r, &r.candidates[i], i + 1});
    return out;
}

// `slim` leaves out the fields not in_fit: the $/M columns (kept
// in --wide, Markdown and CSV) and the E2E p50, when a searched KV dtype or
// weight format widens the knobs column.
Table fleet_table(const SloRecommendResult& r, bool slim) {
    return fields_table(slo_fleet_fields(), shown_rows(r), 2, slim ? Width::Fit : Width::Wide);
}
Table latency_table(const SloRecommendResult& r, bool slim) {
    return fields_table(slo_latency_fields(), shown_rows(r), 2, slim ? Width::Fit : Width::Wide);
}

// A table at full width, or slimmed when it would not fit (Fit only).
template <typename Build>
std::string fitted(Build build, Width width) {
    std::string out = build(false).render_text(width);
    if (width == Width::Fit && widest_line(out) > kFitColumns) out = build(true).render_text(width);
    return out;
}

std::string rejected_list(const SloRecommendResult& r) {
    if (r.rejected.empty()) return "";
    const std::size_t shown = r.wide ? r.rejected.size() : std::min(r.rejected.size(), r.top);
    std::string out = shown == r.rejected.size() ? fmt::format("\nRejected ({}):\n", r.rejected.size())
                                                 : fmt::format("\nRejected ({} of {}; --wide lists all):\n", shown, r.rejected.size());
    for (std::size_t i = 0; i < shown; ++i)
        out += fit_line(layout(r, r.rejected[i]) + ": " + rejection_reason(r, r.rejected[i]), r.wide ? Width::Wide : Width::Fit, "  ", "    ");
    return out;
}

nlohmann::ordered_json optional_json(const std::optional<double>& v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json slo_json(const Slo& slo) {
    nlohmann::ordered_json j;
    j["ttft_s"] = optional_json(slo.ttft_s);
    j["tpot_s"] = optional_json(slo.tpot_s);
    j["e2e_s"] = optional_json(slo.e2e_s);
    return j;
}

nlohmann::ordered_json scaled_json(const ScaledFleet& f) {
    nlohmann::ordered_json x;
    x["window_s"] = f.window_s;
    x["replicas"] = f.replicas;
    x["min_replicas"] = f.min_replicas;
    x["max_replicas"] = f.max_replicas;
    x["gpu_hours"] = f.gpu_hours;
    x["fixed_gpu_hours"] = f.fixed_gpu_hours;
    x["usd"] = optional_json(f.usd);
    x["fixed_usd"] = optional_json(f.fixed_usd);
    return x;
}

// The best candidate scaled minute by minute, against its fixed fleet.
std::string scaled_line(const SloCandidate& c) {
    const ScaledFleet& f = *c.scaled;
    const std::string range =
        f.min_replicas == f.max_replicas ? fmt::format("{}", f.min_replicas) : fmt::format("{} to {}", f.min_replicas, f.max_replicas);
    std::string cost;
    if (f.usd && f.fixed_usd) cost = fmt::format(", {:.2f} against {:.2f} USD", *f.usd, *f.fixed_usd);
    return fmt::format(
        "Scaled minute by minute to the trace's rate, the best needs {} replica{} over its {} minutes: "
        "{:.2f} GPU-hours against {:.2f} for the fixed fleet{}.",
        range, f.max_replicas > 1 ? "s" : "", f.replicas.size(), f.gpu_hours, f.fixed_gpu_hours, cost);
}

// Why the best's settings differ from the engine's defaults: the knob
// setting the search picked (docs/recommend.md, "Candidates"). Under SGLang's
// DP attention both figures are the server's totals.
std::vector<std::string> knob_reasons(const SloRecommendResult& r, const SloCandidate& c) {
    const bool sglang = r.engine == "sglang";
    const std::string seqs = fmt::format("{} {}", sglang ? "--max-running-requests" : "--max-num-seqs",
                                         sglang ? c.serve.rank_batch() * c.serve.attention_dp : c.serve.rank_batch());
    const std::string tokens = fmt::format("{} {}", sglang ? "--chunked-prefill-size" : "--max-num-batched-tokens",
                                           sglang ? c.serve.max_num_batched_tokens * c.serve.attention_dp : c.serve.max_num_batched_tokens);
    const std::string engine = sglang ? "SGLang" : "vLLM";
    if (c.knobs == "latency")
        return {
            fmt::format("{} and {}: the search's latency setting (at most 64 sequences and 2,048 tokens a step; half of {}'s "
                        "default batch where that is smaller), whose shorter steps keep TPOT down",
                        seqs, tokens, engine)};
    if (c.knobs == "throughput")
        return {
            fmt::format("{}: the search's throughput setting (twice {}'s default tokens a step), whose larger chunks "
                        "prefill prompts in fewer steps",
                        tokens, engine)};
    return {};
}

// A disaggregated unit's commands: each side's instance for vLLM and SGLang, and SGLang's router.
std::string unit_commands(const SloRecommendResult& r, const SloCandidate& c, Width width) {
    auto count = [](std::int64_t n, const char* what) { return fmt::format("{} {}{}", group_digits(n), what, n > 1 ? "s" : ""); };
    std::string out =
        fit_line(fmt::format("Commands for the best ({}: {} of {} of {} and {} of {}, KV over {}):", c.gpu, count(c.fleet.replicas, "unit"),
                             count(c.prefill_replicas, "prefill instance"), side_words(c.prefill_tp, c.prefill_dp),
                             count(c.decode_replicas, "decode instance"), side_words(c.tp, c.dp), c.kv_link),
                 width);
    ServeOptions s = serve_for(r, c);
    s.pd_role = "prefill";
    const ServeOptions prefill = s;
    s.pd_role = "decode";
    out += vllm_command_lines(c.prefill_serve, prefill, r.wide) + vllm_command_lines(c.serve, s, r.wide);
    out += sglang_command_lines(c.prefill_serve, prefill, r.wide) + sglang_command_lines(c.serve, s, r.wide);
    out += sglang_pd_router_command_lines(r.wide);
    out += fit_line(fmt::format("Start {} prefill and {} decode servers. vLLM's need a proxy that sends each request to a prefill "
                                "instance with max_tokens 1, then to a decode instance (vLLM's toy_proxy_server.py, llm-d or Dynamo); "
                                "SGLang's router does it, given one --prefill and one --decode per instance.",
                                group_digits(c.fleet.replicas * c.prefill_replicas), group_digits(c.fleet.replicas * c.decode_replicas)),
                    width, "  ", "  ");
    return out;
}

// What binds a plan at the rate that fails, and what that says.
std::string bound_by(const SloCandidate& c) {
    const std::string& b = c.outcome.binding;
    if (b == "tpot") return c.pd() ? "TPOT first (its decode instances limit it)" : "TPOT first (prefill chunks share its decode steps)";
    if (b == "ttft")
        return c.pd() ? "TTFT first (its prefill instances or the KV transfer limit it)" : "TTFT first (prompts wait for the token budget)";
    if (b == "e2e") return "E2E first";
    return "no target first";
}

std::string fleet_words(const SloCandidate& c) {
    return fmt::format("{} GPU{}{}", group_digits(c.fleet.gpus), c.fleet.gpus > 1 ? "s" : "",
                       c.fleet.usd_per_hour ? fmt::format(", {:.2f} USD/hour", *c.fleet.usd_per_hour) : "");
}

// --disaggregated: which kind wins for this traffic, and why.
std::string pd_verdict(const SloRecommendResult& r) {
    if (!r.disaggregated || (!r.best_aggregated && !r.best_disaggregated)) return "";
    if (!r.best_disaggregated) {
        for (const SloCandidate& c : r.rejected)
            if (c.pd()) return "No disaggregated unit qualifies; the first rejected: " + layout(r, c) + ": " + rejection_reason(r, c);
        return "No disaggregated unit fits: each side needs a TP that holds the model, the unit at most 16 GPUs.";
    }
    const SloCandidate& d = *r.best_disaggregated;
    if (!r.best_aggregated)
        return fmt::format("Only disaggregated units qualify: the best, {}, takes {}; it misses {} at the rate that fails.", layout(r, d),
                           fleet_words(d), bound_by(d));
    const SloCandidate& a = *r.best_aggregated;
    return fmt::format(
        "Aggregated or disaggregated: the best aggregated plan, {}, takes {}; the best unit, {}, takes {}. {} wins. "
        "At the rate that fails, the aggregated replica misses {} and the unit {}.",
        layout(r, a), fleet_words(a), layout(r, d), fleet_words(d), r.disaggregated_wins ? "Disaggregated" : "Aggregated", bound_by(a), bound_by(d));
}

// A disaggregated unit's shape; null fields for an aggregated candidate.
void add_unit_json(nlohmann::ordered_json& x, const SloCandidate& c) {
    auto unit = [&](const auto& v) { return c.pd() ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr); };
    x["disaggregated"] = c.pd();
    x["prefill_replicas"] = unit(c.prefill_replicas);
    x["decode_replicas"] = unit(c.decode_replicas);
    x["prefill_tp"] = unit(c.prefill_tp);
    x["decode_tp"] = unit(c.tp);
    x["prefill_dp"] = unit(c.prefill_dp);  // DP attention + EP groups (EP = DP) when above 1
    x["decode_dp"] = unit(c.dp);
    x["kv_link"] = unit(c.kv_link);
}

// What names a candidate: device, TP (and PP, in the candidate lists), knobs, dtypes, unit shape.
void add_identity_json(nlohmann::ordered_json& x, const SloCandidate& c, bool with_pp) {
    x["gpu"] = c.gpu;
    x["tp"] = c.tp;
    if (with_pp) x["pp"] = c.pp;
    x["attention_dp"] = c.dp;
    x["ep"] = c.dp;  // EP = TP x DP, TP 1
    x["knobs"] = c.knobs;
    x["kv_dtype"] = c.kv_dtype_flag;
    x["weights_dtype"] = c.weights_flag;
    add_unit_json(x, c);
}

// How the long runs confirmed the rate (core/sim/sustained.hpp).
nlohmann::ordered_json sustained_json(const LongRunAccount& a) {
    if (a.draws == 0) return nullptr;
    nlohmann::ordered_json x;
    x["draws"] = a.draws;
    x["requests_per_run"] = a.requests_per_run;
    x["run_s"] = a.run_s;
    x["short_run_rate_rps"] = a.short_rate_rps;
    x["congested_throughput_rps"] = a.congested_rps;
    x["capped_at_congested_throughput"] = a.capped;
    x["first_failing_rate_rps"] = a.fail_rate_rps > 0 ? nlohmann::ordered_json(a.fail_rate_rps) : nlohmann::ordered_json(nullptr);
    x["failed_on"] = a.fail_rate_rps > 0 ? nlohmann::ordered_json(a.breach != Stability::Breach::None ? breach_words(a.breach) : a.binding)
                                         : nlohmann::ordered_json(nullptr);
    x["worst_draw_slo_attainment"] = a.worst_attainment;
    return x;
}

nlohmann::ordered_json plan_json(const SloCandidate& c) {
    nlohmann::ordered_json x;
    add_identity_json(x, c, false);
    x["replicas"] = c.fleet.replicas;
    x["gpus_total"] = c.fleet.gpus;
    x["max_rate_per_replica_rps"] = c.outcome.max_rate_rps;
    x["usd_per_hour"] = optional_json(c.fleet.usd_per_hour);
    x["binding_slo"] = c.outcome.binding.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(c.outcome.binding);
    return x;
}

}  // namespace

std::string sustained_words(const SearchOutcome& x, std::int64_t short_requests) {
    const LongRunAccount& a = x.sustained;
    std::string out = fmt::format("How the best's rate holds: short runs ({} requests) pass {:.2f} req/s; congested, it finishes {:.2f} req/s", group_digits(short_requests),
                                  a.short_rate_rps, a.congested_rps);
    out += a.capped ? ", and no queue is stable above that" : "";
    out += fmt::format("; at {:.2f} req/s each of {} draws of {} requests ({:.1f} min of arrivals) stays stable and meets the SLO (worst draw {:.1f}%)",
                       x.max_rate_rps, a.draws, group_digits(a.requests_per_run), a.run_s / 60, 100 * a.worst_attainment);
    if (a.fail_rate_rps > 0)
        out += fmt::format("; {:.2f} req/s failed: {}", a.fail_rate_rps, a.breach != Stability::Breach::None ? breach_words(a.breach) : "misses " + a.binding);
    return out + ".";
}

const Fields<SloRow>& slo_fleet_fields() {
    using J = nlohmann::ordered_json;
    using R = SloRow;
    auto opt = [](const std::optional<double>& v) { return v ? J(*v) : J(nullptr); };
    static const Fields<R> fields = {
        {.key = "rank",
         .kind = FieldKind::Number,
         .json = [](const R& x) { return J(x.rank); },
         .header = "#",
         .cell = [](const R& x) { return std::to_string(x.rank); }},
        {.key = "gpu", .json = [](const R& x) { return J(x.candidate->gpu); }, .header = "gpu", .cell = [](const R& x) { return x.candidate->gpu; }},
        {.key = "tp",
         .kind = FieldKind::Number,
         .json = [](const R& x) { return J(x.candidate->tp); },
         .header = "tp",
         .cell = [](const R& x) { return tp_text(*x.candidate); }},
        {.key = "pp", .kind = FieldKind::Number, .json = [](const R& x) { return J(x.candidate->pp); }},
        {.key = "attention_dp", .kind = FieldKind::Number, .json = [](const R& x) { return J(x.candidate->dp); }},
        {.key = "knobs",
         .json = [](const R& x) { return J(x.candidate->knobs); },
         .header = "knobs",
         .cell = [](const R& x) { return knobs(*x.result, *x.candidate); }},
        {.key = "kv_dtype", .json = [](const R& x) { return J(x.candidate->kv_dtype_flag); }},
        {.key = "weights_dtype", .json = [](const R& x) { return J(x.candidate->weights_flag); }},
        {.key = "disaggregated", .kind = FieldKind::Flag, .json = [](const R& x) { return J(x.candidate->pd()); }},
        {.key = "prefill_replicas",
         .kind = FieldKind::Number,
         .json = [](const R& x) { return x.candidate->pd() ? J(x.candidate->prefill_replicas) : J(nullptr); }},
        {.key = "decode_replicas",
         .kind = FieldKind::Number,
         .json = [](const R& x) { return x.candidate->pd() ? J(x.candidate->decode_replicas) : J(nullptr); }},
        {.key = "max_num_seqs", .kind = FieldKind::Number, .json = [](const R& x) { return J(x.candidate->serve.batch); }},
        {.key = "max_num_batched_tokens", .kind = FieldKind::Number, .json = [](const R& x) { return J(x.candidate->serve.max_num_batched_tokens); }},
        {.key = "max_rate_per_replica_rps",
         .kind = FieldKind::Number,
         .json = [](const R& x) { return J(x.candidate->outcome.max_rate_rps); },
         .header = "req/s per\nreplica",
         .cell = [](const R& x) { return rate(x.candidate->outcome.max_rate_rps); }},
        {.key = "band_low_rps",
         .kind = FieldKind::Number,
         .json = [](const R& x) { return x.candidate->band ? J(x.candidate->band->low_rps) : J(nullptr); },
         .header = "step model\nrange",
         .cell = [](const R& x) { return band_text(*x.candidate); }},
        {.key = "band_high_rps",
         .kind = FieldKind::Number,
         .json = [](const R& x) { return x.candidate->band ? J(x.candidate->band->high_rps) : J(nullptr); }},
        {.key = "sized_on_rate_rps", .kind = FieldKind::Number, .json = [](const R& x) { return J(x.candidate->sizing_rate_rps()); }},
        {.key = "replicas",
         .kind = FieldKind::Number,
         .json = [](const R& x) { return J(x.candidate->fleet.replicas); },
         .header = "replicas",
         .cell = [](const R& x) { return group_digits(x.candidate->fleet.replicas); }},
        {.key = "gpus_total",
         .kind = FieldKind::Number,
         .json = [](const R& x) { return J(x.candidate->fleet.gpus); },
         .header = "GPUs",
         .cell = [](const R& x) { return group_digits(x.candidate->fleet.gpus); }},
        {.key = "usd_per_hour",
         .kind = FieldKind::Number,
         .json = [=](const R& x) { return opt(x.candidate->fleet.usd_per_hour); },
         .header = "$/hour",
         .cell = [](const R& x) { return money(x.candidate->fleet.usd_per_hour, "{:.2f}"); }},
        {.key = "usd_per_million_input_tokens",
         .kind = FieldKind::Number,
         .json = [=](const R& x) { return opt(x.candidate->fleet.usd_per_million_input_tokens); },
         .header = "$/M\ninput",
         .cell = [](const R& x) { return money(x.candidate->fleet.usd_per_million_input_tokens); },
         .in_fit = false},
        {.key = "usd_per_million_output_tokens",
         .kind = FieldKind::Number,
         .json = [=](const R& x) { return opt(x.candidate->fleet.usd_per_million_output_tokens); },
         .header = "$/M\noutput",
         .cell = [](const R& x) { return money(x.candidate->fleet.usd_per_million_output_tokens); },
         .in_fit = false},
        {.key = "usd_per_million_tokens",
         .kind = FieldKind::Number,
         .json = [=](const R& x) { return opt(x.candidate->fleet.usd_per_million_tokens); },
         .header = "$/M\ntokens",
         .cell = [](const R& x) { return money(x.candidate->fleet.usd_per_million_tokens); },
         .in_fit = false},  // the step model's range takes its place in 100 columns; --wide, CSV, JSON keep it
        {.key = "binding_slo",
         .json = [](const R& x) { return x.candidate->outcome.binding.empty() ? J(nullptr) : J(x.candidate->outcome.binding); },
         .header = "binds",
         .cell = [](const R& x) { return x.candidate->outcome.binding; }},
    };
    return fields;
}

const Fields<SloRow>& slo_latency_fields() {
    using J = nlohmann::ordered_json;
    using R = SloRow;
    auto at = [](const R& x) -> const SimSummary& { return x.candidate->outcome.at_max; };
    // The candidate's identity is the fleet list's: here table-only, so that the CSV names it once.
    static const Fields<R> fields = {
        {.header = "#", .cell = [](const R& x) { return std::to_string(x.rank); }},
        {.header = "gpu", .cell = [](const R& x) { return x.candidate->gpu; }},
        {.header = "tp", .cell = [](const R& x) { return tp_text(*x.candidate); }},
        {.header = "knobs", .cell = [](const R& x) { return knobs(*x.result, *x.candidate); }},
        {.key = "ttft_p50_s",
         .kind = FieldKind::Number,
         .json = [=](const R& x) { return J(at(x).ttft_s.p50); },
         .header = "TTFT ms\np50",
         .cell = [=](const R& x) { return ms(at(x).ttft_s.p50); }},
        {.key = "ttft_p99_s",
         .kind = FieldKind::Number,
         .json = [=](const R& x) { return J(at(x).ttft_s.p99); },
         .header = "TTFT ms\np99",
         .cell = [=](const R& x) { return ms(at(x).ttft_s.p99); }},
        {.key = "tpot_p50_s",
         .kind = FieldKind::Number,
         .json = [=](const R& x) { return J(at(x).tpot_s.p50); },
         .header = "TPOT ms\np50",
         .cell = [=](const R& x) { return ms(at(x).tpot_s.p50); }},
        {.key = "tpot_p99_s",
         .kind = FieldKind::Number,
         .json = [=](const R& x) { return J(at(x).tpot_s.p99); },
         .header = "TPOT ms\np99",
         .cell = [=](const R& x) { return ms(at(x).tpot_s.p99); }},
        {.key = "e2e_p50_s",
         .kind = FieldKind::Number,
         .json = [=](const R& x) { return J(at(x).e2e_s.p50); },
         .header = "E2E s\np50",
         .cell = [=](const R& x) { return sec(at(x).e2e_s.p50); },
         .in_fit = false},
        {.key = "e2e_p99_s",
         .kind = FieldKind::Number,
         .json = [=](const R& x) { return J(at(x).e2e_s.p99); },
         .header = "E2E s\np99",
         .cell = [=](const R& x) { return sec(at(x).e2e_s.p99); }},
        {.key = "slo_attainment", .kind = FieldKind::Number, .json = [=](const R& x) { return or_null(at(x).slo_attainment); }},
    };
    return fields;
}

std::string render_slo_table(const SloRecommendResult& r) {
    const Width width = r.wide ? Width::Wide : Width::Fit;
    std::string out = fit_line(fmt::format("{} on {}: {}", r.base.model, r.engine, workload_words(r)), width);
    out += fit_line(fmt::format("SLO: {}; target {} req/s ({})", targets(r), rate(r.target_rps), r.target_source), width);
    if (r.candidates.empty()) {
        out += fit_line("Nothing qualifies. " + nearest_words(r.rejected, r.requests_per_run, kSloDefaultRequests), width, "\n");
    } else {
        out += "\n" + fitted([&](bool slim) { return fleet_table(r, slim); }, width);
        out += "\nLatency at each candidate's rate per replica (one replica, simulated):\n" +
               fitted([&](bool slim) { return latency_table(r, slim); }, width);
        const auto shown = r.candidates.begin() + static_cast<std::ptrdiff_t>(std::min(r.top, r.candidates.size()));
        if (std::any_of(r.candidates.begin(), shown, [](const SloCandidate& c) { return c.pd(); }))
            out += fit_line(
                "TP a/b with nP:mD is a disaggregated unit: n prefill instances of TP a and m decode instances of TP b, "
                "simulated together; its req/s, replicas and latencies are per unit.",
                width);
        if (std::any_of(r.candidates.begin(), shown, [](const SloCandidate& c) { return c.dp > 1 || c.prefill_dp > 1; }))
            out += fit_line(
                "1 epN: data-parallel attention on N GPUs (TP 1 each) with the routed experts over EP N, vLLM's "
                "--data-parallel-size N --enable-expert-parallel; in a unit, each such instance is one DP group.",
                width);
        const SloCandidate& best = r.candidates.front();
        if (best.outcome.sustained.draws > 0) out += "\n" + fit_line(sustained_words(best.outcome, r.requests_per_run), width);
        if (best.pd()) {
            out += "\n" + unit_commands(r, best, width);
        } else {
            out += "\n" + fit_line(fmt::format("Commands for the best ({}, TP {}{}{}, {} replica{}{}):", best.gpu, best.tp,
                                               best.pp > 1 ? fmt::format(" PP {}", best.pp) : "",
                                               best.dp > 1 ? fmt::format(" DP {} + EP {}{}", best.dp, best.dp,
                                                                         best.serve.nodes > 1 ? fmt::format(" over {} nodes", best.serve.nodes) : "")
                                                           : "",
                                               best.fleet.replicas, best.fleet.replicas > 1 ? "s" : "",
                                               best.fleet.replicas <= 1 ? ""
                                               : best.dp > 1            ? ": as many separate servers"
                                                                        : ": data parallelism, or as many separate servers"),
                                   width);
            ServeOptions s = serve_for(r, best);
            s.reasons = knob_reasons(r, best);
            out += reason_lines(s, r.wide);
            out += vllm_command_lines(best.serve, s, r.wide);
            out += sglang_command_lines(best.serve, s, r.wide);
        }
        if (best.scaled) out += "\n" + fit_line(scaled_line(best), width);
    }
    if (const std::string v = pd_verdict(r); !v.empty()) out += "\n" + fit_line(v, width);
    out += rejected_list(r);
    out += fit_line(fmt::format("Searched {} candidates: {} simulations, {} simulated requests ({} per run).", r.tried, group_digits(r.simulations),
                                group_digits(r.simulated_requests), group_digits(r.requests_per_run)),
                    width, "\n");
    for (const std::string& n : notes(r)) out += fit_line(n, width, "note: ", "      ");
    return out;
}

std::string render_slo_json(const SloRecommendResult& r) {
    const ServeOptions base = serve_options(r.base);
    nlohmann::ordered_json j;
    j["model"] = r.base.model;
    j["served_model"] = base.model;
    j["engine"] = r.engine;
    j["workload"] = workload_words(r);
    j["slo"] = slo_json(r.slo);
    j["goodput"] = r.goodput;
    j["target_rate_rps"] = r.target_rps;
    j["target_source"] = r.target_source;
    j["mean_input_tokens"] = r.mean_input_tokens;
    j["mean_output_tokens"] = r.mean_output_tokens;
    j["requests_per_run"] = r.requests_per_run;
    j["candidates"] = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < r.candidates.size() && i < r.top; ++i) {
        const SloCandidate& c = r.candidates[i];
        const SimSummary& m = c.outcome.at_max;
        nlohmann::ordered_json x;
        add_identity_json(x, c, true);
        x["max_num_seqs"] = c.serve.batch;
        x["max_num_batched_tokens"] = c.serve.max_num_batched_tokens;
        x["replicas"] = c.fleet.replicas;
        x["gpus_total"] = c.fleet.gpus;
        x["max_rate_per_replica_rps"] = c.outcome.max_rate_rps;
        x["sustained"] = sustained_json(c.outcome.sustained);
        x["band_low_rps"] = c.band ? nlohmann::ordered_json(c.band->low_rps) : nlohmann::ordered_json(nullptr);
        x["band_high_rps"] = c.band ? nlohmann::ordered_json(c.band->high_rps) : nlohmann::ordered_json(nullptr);
        x["sized_on_rate_rps"] = c.sizing_rate_rps();
        x["ttft_p50_s"] = m.ttft_s.p50;
        x["ttft_p99_s"] = m.ttft_s.p99;
        x["tpot_p50_s"] = m.tpot_s.p50;
        x["tpot_p99_s"] = m.tpot_s.p99;
        x["e2e_p50_s"] = m.e2e_s.p50;
        x["e2e_p99_s"] = m.e2e_s.p99;
        x["slo_attainment"] = optional_json(m.slo_attainment);
        x["binding_slo"] = c.outcome.binding.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(c.outcome.binding);
        x["usd_per_hour"] = optional_json(c.fleet.usd_per_hour);
        x["usd_per_million_input_tokens"] = optional_json(c.fleet.usd_per_million_input_tokens);
        x["usd_per_million_output_tokens"] = optional_json(c.fleet.usd_per_million_output_tokens);
        x["usd_per_million_tokens"] = optional_json(c.fleet.usd_per_million_tokens);
        ServeOptions s = serve_for(r, c);
        x["nodes_per_replica"] = c.serve.nodes;
        x["two_batch_overlap"] = c.serve.two_batch_overlap;
        x["vllm_command"] = c.pd() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(vllm_command(c.serve, s));
        x["sglang_command"] = c.pd() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(sglang_command(c.serve, s));
        x["vllm_node_commands"] = c.pd() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(vllm_node_commands(c.serve, s));
        x["sglang_node_commands"] = c.pd() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(sglang_node_commands(c.serve, s));
        x["setting_reasons"] = knob_reasons(r, c);
        if (c.pd()) {
            s.pd_role = "prefill";
            x["vllm_prefill_command"] = vllm_command(c.prefill_serve, s);
            x["sglang_prefill_command"] = sglang_command(c.prefill_serve, s);
            s.pd_role = "decode";
            x["vllm_decode_command"] = vllm_command(c.serve, s);
            x["sglang_decode_command"] = sglang_command(c.serve, s);
            x["sglang_router_command"] = sglang_pd_router_command();
        }
        x["replicas_over_time"] = c.scaled ? scaled_json(*c.scaled) : nlohmann::ordered_json(nullptr);
        j["candidates"].push_back(x);
    }
    j["rejected"] = nlohmann::ordered_json::array();
    for (const SloCandidate& c : r.rejected) {
        nlohmann::ordered_json x;
        add_identity_json(x, c, true);
        x["reason"] = rejection_reason(r, c);
        j["rejected"].push_back(x);
    }
    if (r.disaggregated) {
        nlohmann::ordered_json d;
        d["best_aggregated"] = r.best_aggregated ? plan_json(*r.best_aggregated) : nlohmann::ordered_json(nullptr);
        d["best_disaggregated"] = r.best_disaggregated ? plan_json(*r.best_disaggregated) : nlohmann::ordered_json(nullptr);
        d["winner"] = r.best_aggregated && r.best_disaggregated ? nlohmann::ordered_json(r.disaggregated_wins ? "disaggregated" : "aggregated")
                      : r.best_aggregated                       ? nlohmann::ordered_json("aggregated")
                      : r.best_disaggregated                    ? nlohmann::ordered_json("disaggregated")
                                                                : nlohmann::ordered_json(nullptr);
        d["verdict"] = pd_verdict(r);
        j["disaggregation"] = d;
    } else {
        j["disaggregation"] = nullptr;
    }
    j["nearest"] = r.candidates.empty() ? nlohmann::ordered_json(nearest_words(r.rejected, r.requests_per_run, kSloDefaultRequests))
                                        : nlohmann::ordered_json(nullptr);
    j["candidates_tried"] = r.tried;
    j["simulations"] = r.simulations;
    j["simulated_requests"] = r.simulated_requests;
    j["search_s"] = r.search_s;
    j["notes"] = notes(r);
    return json_text(j);
}

std::string breach_words(Stability::Breach b) {
    switch (b) {
        case Stability::Breach::Completions: return "completions fall behind arrivals";
        case Stability::Breach::Queue: return "the queue grows (later requests wait longer to be scheduled)";
        case Stability::Breach::Ttft: return "TTFT grows over the run";
        case Stability::Breach::Preemption: return "a preemption storm";
        case Stability::Breach::None: break;
    }
    return "stable";
}

std::string render_slo_markdown(const SloRecommendResult& r) {
    std::string out = "### " + markdown_cell(fmt::format("{} on {}: {}", r.base.model, r.engine, workload_words(r))) + "\n\n";
    out += markdown_cell(fmt::format("SLO: {}; target {} req/s ({})", targets(r), rate(r.target_rps), r.target_source)) + "\n\n";
    if (r.candidates.empty())
        return out + markdown_cell("Nothing qualifies. " + nearest_words(r.rejected, r.requests_per_run, kSloDefaultRequests)) + "\n";
    const std::vector<SloRow> rows = shown_rows(r);
    out += fields_table(slo_fleet_fields(), rows, 2).render_markdown();
    out += "\nLatency at each candidate's rate per replica (one replica, simulated):\n\n";
    out += fields_table(slo_latency_fields(), rows, 2).render_markdown();
    const SloCandidate& best = r.candidates.front();
    ServeOptions s = serve_for(r, best);
    if (!best.pd()) {
        s.reasons = knob_reasons(r, best);
        return out + "\n```sh\n" + reason_lines(s, true) + vllm_command_lines(best.serve, s, true) + sglang_command_lines(best.serve, s, true) +
               "```\n";
    }
    // A unit: each side's instance in each engine, then SGLang's router (the table's unit_commands, without its sentences).
    s.pd_role = "prefill";
    const ServeOptions prefill = s;
    s.pd_role = "decode";
    return out + "\n```sh\n  # each prefill instance, then each decode instance\n" + vllm_command_lines(best.prefill_serve, prefill, true) +
           vllm_command_lines(best.serve, s, true) + sglang_command_lines(best.prefill_serve, prefill, true) +
           sglang_command_lines(best.serve, s, true) + sglang_pd_router_command_lines(true) + "```\n";
}

std::string render_slo_csv(const SloRecommendResult& r) {
    static const Fields<SloRow> all = [] {
        Fields<SloRow> f = slo_fleet_fields();
        f.insert(f.end(), slo_latency_fields().begin(), slo_latency_fields().end());
        return f;
    }();
    return fields_csv_table(all, shown_rows(r)).render_csv();
}

std::string outcome_words(const SearchOutcome& x, double target_rps, std::size_t top) {
    if (x.status == SearchOutcome::Status::Unstable) {
        const LongRunAccount& a = x.sustained;
        return fmt::format("passes short runs at {:.3g} req/s, but on {} long runs no rate down to {:.3g} req/s holds ({})", a.short_rate_rps,
                           a.draws, a.fail_rate_rps, a.breach != Stability::Breach::None ? breach_words(a.breach) : "misses " + a.binding);
    }
    if (x.status == SearchOutcome::Status::Pruned && x.sustained.draws == 0 && x.sustained.short_rate_rps > 0) {
        const double replicas = std::ceil(target_rps / x.sustained.short_rate_rps);
        return fmt::format("even at its short-run rate of {:.3g} req/s per replica ({} replica{}), more than long runs confirm, it costs more than "
                           "the {} cheapest found",
                           x.sustained.short_rate_rps, replicas, replicas > 1 ? "s" : "", top);
    }
    if (x.status == SearchOutcome::Status::Pruned && x.simulations > 0) {
        const double replicas = std::ceil(target_rps / x.fail_rate_rps);
        return fmt::format("it fails at {:.3g} req/s per replica, so it needs more than {} replica{} and costs more than the {} cheapest found",
                           x.fail_rate_rps, replicas, replicas > 1 ? "s" : "", top);
    }
    if (x.status == SearchOutcome::Status::Pruned) {
        const double replicas = std::ceil(target_rps / x.bound_rps);
        return fmt::format("even at its bound of {:.2f} req/s per replica ({} replica{}) it costs more than the {} cheapest found", x.bound_rps,
                           replicas, replicas > 1 ? "s" : "", top);
    }
    if (x.status == SearchOutcome::Status::Burst)
        return fmt::format(
            "the workload meets the targets even at {:.3g} req/s, {:g} x the most its decode steps sustain: "
            "too few requests to find its rate (raise --requests, or replay a longer trace)",
            x.max_rate_rps, kBurstFactor);
    if (x.status == SearchOutcome::Status::SloAlone)
        return fmt::format("{} is {:.1f} ms for a request alone (the goodput quantile), over the {:.1f} ms target", x.binding, x.alone_value_s * 1e3,
                           x.target_s * 1e3);
    return fmt::format("misses {} at every rate down to {:.3g} req/s", x.binding.empty() ? "a target" : x.binding, x.fail_rate_rps);
}

std::string rejection_reason(const SloRecommendResult& r, const SloCandidate& c) {
    if (!c.reason.empty()) return c.reason;
    const std::string words = c.cost_rank > 0 ? cost_rank_words(c, r.candidates.front(), c.cost_rank) : outcome_words(c.outcome, r.target_rps, r.top);
    return rejection_prefix(c.rejection) + words;
}

std::string workload_words(const SloRecommendResult& r) {
    return r.replay_every > 1 ? r.workload + fmt::format(", 1 request in {} replayed per run", r.replay_every) : r.workload;
}

std::string cost_rank_words(const SloCandidate& c, const SloCandidate& best, std::size_t rank) {
    return c.fleet.usd_per_hour && best.fleet.usd_per_hour
               ? fmt::format("ranked {}, {:.2f} USD/hour against the best's {:.2f}", rank, *c.fleet.usd_per_hour, *best.fleet.usd_per_hour)
               : fmt::format("ranked {}, {} GPUs against the best's {}", rank, c.fleet.gpus, best.fleet.gpus);
}

std::string nearest_words(const std::vector<SloCandidate>& rejected, std::int64_t requests_per_run, std::int64_t default_requests) {
    const auto bursts =
        std::count_if(rejected.begin(), rejected.end(), [](const SloCandidate& c) { return c.outcome.status == SearchOutcome::Status::Burst; });
    if (bursts > 0)
        return fmt::format(
            "{} candidate{} meet{} the targets even at {:g} x the rate {} decode steps sustain: {} requests are too few "
            "to find a rate. Raise --requests (the default is {}) or replay a longer trace.",
            bursts, bursts > 1 ? "s" : "", bursts > 1 ? "" : "s", kBurstFactor, bursts > 1 ? "their" : "its", group_digits(requests_per_run),
            group_digits(default_requests));
    const SloCandidate* best = nullptr;
    for (const SloCandidate& c : rejected)
        if (c.outcome.status == SearchOutcome::Status::SloAlone && c.rejection == Rejection::Slo &&
            (!best || c.outcome.alone_value_s / c.outcome.target_s < best->outcome.alone_value_s / best->outcome.target_s))
            best = &c;
    if (!best) return "No GPU x TP up to --max-gpus holds the model and a request of this traffic.";
    const double need = std::ceil(best->outcome.alone_value_s * 1e4) / 1e4;  // rounded up to 0.1 ms
    const std::string layout = best->pd()     ? unit_sides(*best)
                               : best->pp > 1 ? fmt::format("{} TP {} PP {}", best->gpu, best->tp, best->pp)
                                              : fmt::format("{} TP {}", best->gpu, best->tp);
    const std::string knobs = best->pd() ? fmt::format("{}P:{}D", best->prefill_replicas, best->decode_replicas) : best->knobs;
    return fmt::format("The {} target binds: the closest is {} ({}), {:.1f} ms for a request alone; {}={:.1f}ms would pass at a low rate.",
                       best->outcome.binding, layout, knobs, best->outcome.alone_value_s * 1e3, best->outcome.binding, need * 1e3);
}

}  // namespace kvplan
