#include "io/slo_report.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/digits.hpp"
#include "core/model/weight_format.hpp"
#include "io/display_width.hpp"
#include "io/table.hpp"

namespace kvplan {

namespace {

std::string ms(double s) { return fmt::format("{:.1f}", s * 1e3); }
std::string sec(double s) { return fmt::format("{:.2f}", s); }
std::string money(const std::optional<double>& usd, const char* f = "{:.3f}") { return usd ? fmt::format(fmt::runtime(f), *usd) : "-"; }
std::string rate(double rps) { return fmt::format("{:.2f}", rps); }

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
    std::string out = c.knobs;
    if (r.kv_axis) out += ", kv " + c.kv_dtype_flag;
    if (r.weights_axis) out += ", w " + c.weights_flag;
    return out;
}

std::string layout(const SloRecommendResult& r, const SloCandidate& c) { return fmt::format("{} TP {} ({})", c.gpu, c.tp, knobs(r, c)); }

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

// `slim` leaves out the per-direction $/M columns (kept in --wide and the
// JSON) when a searched KV dtype or weight format widens the knobs column.
Table fleet_table(const SloRecommendResult& r, bool slim) {
    std::vector<std::string> head = {"#", "gpu", "tp", "knobs", "req/s per\nreplica", "replicas", "GPUs", "$/hour"};
    if (!slim) head.insert(head.end(), {"$/M\ninput", "$/M\noutput"});
    head.insert(head.end(), {"$/M\ntokens", "binds"});
    Table t(head, 2);
    for (std::size_t i = 0; i < r.candidates.size() && i < r.top; ++i) {
        const SloCandidate& c = r.candidates[i];
        std::vector<std::string> row = {std::to_string(i + 1), c.gpu, std::to_string(c.tp), knobs(r, c), rate(c.outcome.max_rate_rps),
                                        group_digits(c.fleet.replicas), group_digits(c.fleet.gpus), money(c.fleet.usd_per_hour, "{:.2f}")};
        if (!slim) row.insert(row.end(), {money(c.fleet.usd_per_million_input_tokens), money(c.fleet.usd_per_million_output_tokens)});
        row.insert(row.end(), {money(c.fleet.usd_per_million_tokens), c.outcome.binding});
        t.add(std::move(row));
    }
    return t;
}

// `slim` leaves out the E2E p50 column likewise.
Table latency_table(const SloRecommendResult& r, bool slim) {
    std::vector<std::string> head = {"#", "gpu", "tp", "knobs", "TTFT ms\np50", "TTFT ms\np99", "TPOT ms\np50", "TPOT ms\np99"};
    if (!slim) head.push_back("E2E s\np50");
    head.push_back("E2E s\np99");
    Table t(head, 2);
    for (std::size_t i = 0; i < r.candidates.size() && i < r.top; ++i) {
        const SloCandidate& c = r.candidates[i];
        const SimSummary& s = c.outcome.at_max;
        std::vector<std::string> row = {std::to_string(i + 1), c.gpu, std::to_string(c.tp), knobs(r, c), ms(s.ttft_s.p50), ms(s.ttft_s.p99),
                                        ms(s.tpot_s.p50), ms(s.tpot_s.p99)};
        if (!slim) row.push_back(sec(s.e2e_s.p50));
        row.push_back(sec(s.e2e_s.p99));
        t.add(std::move(row));
    }
    return t;
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
        out += fit_line(layout(r, r.rejected[i]) + ": " + r.rejected[i].reason, r.wide ? Width::Wide : Width::Fit, "  ", "    ");
    return out;
}

nlohmann::ordered_json optional_json(const std::optional<double>& v) { return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr); }

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
    const std::string range = f.min_replicas == f.max_replicas ? fmt::format("{}", f.min_replicas)
                                                               : fmt::format("{} to {}", f.min_replicas, f.max_replicas);
    std::string cost;
    if (f.usd && f.fixed_usd) cost = fmt::format(", {:.2f} against {:.2f} USD", *f.usd, *f.fixed_usd);
    return fmt::format("Scaled minute by minute to the trace's rate, the best needs {} replica{} over its {} minutes: "
                       "{:.2f} GPU-hours against {:.2f} for the fixed fleet{}.",
                       range, f.max_replicas > 1 ? "s" : "", f.replicas.size(), f.gpu_hours, f.fixed_gpu_hours, cost);
}

}  // namespace

std::string render_slo_table(const SloRecommendResult& r) {
    const Width width = r.wide ? Width::Wide : Width::Fit;
    std::string out = fit_line(fmt::format("{} on {}: {}", r.base.model, r.engine, r.workload), width);
    out += fit_line(fmt::format("SLO: {}; target {} req/s ({})", targets(r), rate(r.target_rps), r.target_source), width);
    if (r.candidates.empty()) {
        out += "\nNothing qualifies. " + r.nearest + "\n";
    } else {
        out += "\n" + fitted([&](bool slim) { return fleet_table(r, slim); }, width);
        out += "\nLatency at each candidate's rate per replica (one replica, simulated):\n" +
               fitted([&](bool slim) { return latency_table(r, slim); }, width);
        const SloCandidate& best = r.candidates.front();
        out += "\n" + fit_line(fmt::format("Commands for the best ({}, TP {}, {} replica{}{}):", best.gpu, best.tp, best.fleet.replicas,
                                           best.fleet.replicas > 1 ? "s" : "",
                                           best.fleet.replicas > 1 ? ": data parallelism, or as many separate servers" : ""),
                               width);
        const ServeOptions s = serve_for(r, best);
        out += vllm_command_lines(best.serve, s, r.wide);
        out += sglang_command_lines(best.serve, s, r.wide);
        if (best.scaled) out += "\n" + fit_line(scaled_line(best), width);
    }
    out += rejected_list(r);
    out += fit_line(fmt::format("Searched {} candidates: {} simulations, {} simulated requests ({} per run).", r.tried,
                                group_digits(r.simulations), group_digits(r.simulated_requests), group_digits(r.requests_per_run)),
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
    j["workload"] = r.workload;
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
        x["gpu"] = c.gpu;
        x["tp"] = c.tp;
        x["pp"] = 1;
        x["knobs"] = c.knobs;
        x["kv_dtype"] = c.kv_dtype_flag;
        x["weights_dtype"] = c.weights_flag;
        x["max_num_seqs"] = c.serve.batch;
        x["max_num_batched_tokens"] = c.serve.max_num_batched_tokens;
        x["replicas"] = c.fleet.replicas;
        x["gpus_total"] = c.fleet.gpus;
        x["max_rate_per_replica_rps"] = c.outcome.max_rate_rps;
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
        const ServeOptions s = serve_for(r, c);
        x["vllm_command"] = vllm_command(c.serve, s);
        x["sglang_command"] = sglang_command(c.serve, s);
        x["replicas_over_time"] = c.scaled ? scaled_json(*c.scaled) : nlohmann::ordered_json(nullptr);
        j["candidates"].push_back(x);
    }
    j["rejected"] = nlohmann::ordered_json::array();
    for (const SloCandidate& c : r.rejected) {
        nlohmann::ordered_json x;
        x["gpu"] = c.gpu;
        x["tp"] = c.tp;
        x["pp"] = 1;
        x["knobs"] = c.knobs;
        x["kv_dtype"] = c.kv_dtype_flag;
        x["weights_dtype"] = c.weights_flag;
        x["reason"] = c.reason;
        j["rejected"].push_back(x);
    }
    j["nearest"] = r.nearest.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.nearest);
    j["candidates_tried"] = r.tried;
    j["simulations"] = r.simulations;
    j["simulated_requests"] = r.simulated_requests;
    j["search_s"] = r.search_s;
    j["notes"] = notes(r);
    return j.dump(2) + "\n";
}

}  // namespace kvplan
