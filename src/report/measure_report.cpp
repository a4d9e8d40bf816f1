#include "report/measure_report.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/units.hpp"
#include "report/json_value.hpp"
#include "report/table.hpp"

namespace kvplan {

namespace {

std::string ms(double s) {
    return fmt::format("{:.3f}", s * 1e3);
}
std::string err(const MeasuredStep& m) {
    return fmt::format("{:+.1f}%", (m.predicted_s / m.measured_s - 1) * 100);
}
std::string gbs(double bytes_per_s) {
    return fmt::format("{:.2f} GB/s", bytes_per_s / 1e9);
}
std::string gflops(double flop_per_s) {
    return fmt::format("{:.1f} GFLOP/s", flop_per_s / 1e9);
}
std::string spread(const RepeatRange& r, double median) {
    return r.known() ? fmt::format("{:.1f}%", r.relative(median) * 100) : "-";
}

// "12.41–12.70" in the unit `format` writes (its suffix printed once).
template <typename F>
std::string range(const RepeatRange& r, F&& format) {
    if (!r.known()) return "-";
    const std::string lo = format(r.min), hi = format(r.max);
    return lo.substr(0, lo.find(' ')) + "\u2013" + hi;
}

// The profile's error against the measured step (--engine).
std::string engine_err(const MeasuredStep& m) {
    return fmt::format("{:+.1f}%", (*m.engine_predicted_s / m.measured_s - 1) * 100);
}

Table steps_table(const std::vector<MeasuredStep>& steps, const char* tokens_header, bool engine) {
    std::vector<std::string> head = {"batch", tokens_header, "predicted\n(ms)", "measured\n(ms)", "range\n(ms)", "spread", "error", "achieved"};
    if (engine) head.insert(head.end(), {"profile\n(ms)", "profile\nerror"});
    Table t(head, 0);
    for (const MeasuredStep& m : steps) {
        std::vector<std::string> row = {group_digits(m.batch),
                                        group_digits(m.tokens),
                                        ms(m.predicted_s),
                                        ms(m.measured_s),
                                        range(m.measured_range, ms),
                                        spread(m.measured_range, m.measured_s),
                                        err(m),
                                        gbs(m.bytes / m.measured_s)};
        if (engine) row.insert(row.end(), {ms(*m.engine_predicted_s), engine_err(m)});
        t.add(row);
    }
    return t;
}

// --engine: what the profile columns are, and the range of their errors.
std::string engine_line(const MeasureResult& r) {
    auto span = [](const std::vector<MeasuredStep>& steps) {
        double lo = 1e300, hi = -1e300;
        for (const MeasuredStep& m : steps) {
            lo = std::min(lo, *m.engine_predicted_s / m.measured_s - 1);
            hi = std::max(hi, *m.engine_predicted_s / m.measured_s - 1);
        }
        return lo == hi ? fmt::format("{:+.1f}%", lo * 100) : fmt::format("{:+.1f}% to {:+.1f}%", lo * 100, hi * 100);
    };
    std::string parts;
    if (!r.decode.empty()) parts += "decode " + span(r.decode);
    if (!r.prefill.empty()) parts += (parts.empty() ? "" : ", ") + std::string("prefill ") + span(r.prefill);
    return fit_line(fmt::format("profile = {}'s speed profile on the {} (its fractions of the datasheet bandwidth and FLOP/s; "
                                "no per-step or per-layer cost, which the timed kernels do not pay): {} against the measured steps. "
                                "A calibration from this run (--output) replaces those fractions with the measured rates.",
                                r.engine, r.engine_device, parts),
                    Width::Fit);
}

// Bandwidth and FLOP/s, each a median with its repeats' spread.
std::string kernels_table(const MeasureResult& r) {
    const bool cpu = r.threads > 0;
    Table t({"kernel", "median", "range", "spread"});
    t.add({cpu ? "STREAM read" : "read kernel", gbs(r.read_bytes_per_s), range(r.read_range, gbs), spread(r.read_range, r.read_bytes_per_s)});
    t.add({cpu ? "STREAM copy" : "copy kernel", gbs(r.copy_bytes_per_s), range(r.copy_range, gbs), spread(r.copy_range, r.copy_bytes_per_s)});
    if (cpu) t.add({"STREAM triad", gbs(r.triad_bytes_per_s), range(r.triad_range, gbs), spread(r.triad_range, r.triad_bytes_per_s)});
    t.add({cpu ? "matrix product (the kernels' own rate)" : "matrix product (cuBLAS)", gflops(r.flops_per_s), range(r.flops_range, gflops),
           spread(r.flops_range, r.flops_per_s)});
    return t.render_text();
}

std::string repeats_line(const MeasureResult& r) {
    if (r.repeats <= 0) return "";
    return fmt::format("Each figure is the median of {} timed runs; range = fastest to slowest, spread = range / median{}.\n", r.repeats,
                       r.threads > 0 ? "" : " (kvplan-gpu-bench reports medians only)");
}

}  // namespace

std::string render_measure_table(const MeasureResult& r) {
    // A GPU run's precision names both ("bf16 weights, fp8 KV"); a CPU run's is one dtype for both.
    const std::string precision = r.precision.find("weights") == std::string::npos ? r.precision + " weights and KV" : r.precision;
    std::string out = fit_line(fmt::format("kvplan measure: {} on {}, {}, {} of {} layers timed and scaled", r.model, r.device, precision,
                                           r.layers_measured, r.layers_total),
                               Width::Fit);
    if (r.threads > 0) out += fmt::format("memory bandwidth: STREAM, {} per array, {} threads\n", binary_size(r.stream_array_bytes), r.threads);
    else out += fmt::format("memory bandwidth: 16-byte read and copy kernels over {}\n", binary_size(r.stream_array_bytes));
    out += kernels_table(r) + "\n";
    out += fit_line("Decode step (all layers; embedding and LM head excluded); predicted = roofline with the measured bandwidth and FLOP/s:",
                    Width::Fit);
    const bool engine = !r.engine.empty();
    out += steps_table(r.decode, "context", engine).render_text();
    if (!r.decode.empty()) {
        const MeasuredStep& m = r.decode.front();
        Table c({"component", "measured\n(ms)", "share", "bytes\nmoved", "achieved", "of copy\nbandwidth"});
        const double total = m.measured_s;
        auto row = [&](const char* name, double s, double bytes) {
            c.add({name, ms(s), fmt::format("{:.1f}%", s / total * 100), bytes > 0 ? decimal_size(static_cast<std::int64_t>(bytes)) : "-",
                   bytes > 0 ? gbs(bytes / s) : "-", bytes > 0 ? fmt::format("{:.0f}%", bytes / s / r.copy_bytes_per_s * 100) : "-"});
        };
        row("QKV projection", m.qkv_s, m.qkv_bytes);
        row("attention over the KV cache", m.attention_s, m.attention_bytes);
        row("output projection", m.o_proj_s, m.o_proj_bytes);
        row("MLP", m.mlp_s, m.mlp_bytes);
        row("norms, rotary, residuals, KV append", m.other_s, 0);
        out += fmt::format("\nComponents at batch {}, context {} (the median run):\n", m.batch, group_digits(m.tokens)) + c.render_text();
    }
    if (!r.prefill.empty()) {
        std::vector<std::string> head = {"prompt", "predicted\n(ms)", "measured\n(ms)", "range\n(ms)",
                                         "spread", "error",           "achieved",       "of measured\npeak"};
        if (engine) head.insert(head.end(), {"profile\n(ms)", "profile\nerror"});
        Table p(head, 0);
        for (const MeasuredStep& m : r.prefill) {
            std::vector<std::string> row = {group_digits(m.tokens),
                                            ms(m.predicted_s),
                                            ms(m.measured_s),
                                            range(m.measured_range, ms),
                                            spread(m.measured_range, m.measured_s),
                                            err(m),
                                            fmt::format("{:.2f} TFLOP/s", m.flops / m.measured_s / 1e12),
                                            fmt::format("{:.0f}%", m.flops / m.measured_s / r.flops_per_s * 100)};
            if (engine) row.insert(row.end(), {ms(*m.engine_predicted_s), engine_err(m)});
            p.add(row);
        }
        out += "\nPrefill (all layers):\n" + p.render_text();
    }
    if (engine) out += engine_line(r);
    out += repeats_line(r);
    for (const std::string& n : r.notes) out += fit_line("note: " + n, Width::Fit, "", "  ");
    return out;
}

namespace {

using Json = nlohmann::ordered_json;

// A count of bytes or FLOPs the roofline derived as a real: an integer in the file.
std::int64_t whole(double x) {
    return std::llround(x);
}

// A median rate with its repeats: {median_<unit>, min_<unit>, max_<unit>, spread_percent}; null extremes when not reported.
Json rate_json(double median, const RepeatRange& r, const std::string& unit) {
    Json j;
    j["median_" + unit] = median;
    j["min_" + unit] = r.known() ? Json(r.min) : Json(nullptr);
    j["max_" + unit] = r.known() ? Json(r.max) : Json(nullptr);
    j["spread_percent"] = r.known() ? Json(r.relative(median) * 100) : Json(nullptr);
    return j;
}

Json steps_json(const std::vector<MeasuredStep>& v, const char* tokens_key) {
    Json a = Json::array();
    for (const MeasuredStep& m : v) {
        Json x;
        x["batch"] = m.batch;
        x[tokens_key] = m.tokens;
        x["predicted_s"] = m.predicted_s;
        x["measured_s"] = m.measured_s;
        x["min_s"] = m.measured_range.known() ? Json(m.measured_range.min) : Json(nullptr);
        x["max_s"] = m.measured_range.known() ? Json(m.measured_range.max) : Json(nullptr);
        x["spread_percent"] = m.measured_range.known() ? Json(m.measured_range.relative(m.measured_s) * 100) : Json(nullptr);
        x["predicted_bytes"] = whole(m.bytes);
        x["predicted_flop"] = whole(m.flops);
        x["engine_predicted_s"] = m.engine_predicted_s ? Json(*m.engine_predicted_s) : Json(nullptr);
        a.push_back(x);
    }
    return a;
}

}  // namespace

std::string render_measure_json(const MeasureResult& r) {
    Json j;
    j["schema_version"] = 2;
    j["device"] = r.device;
    j["model"] = r.model;
    j["precision"] = r.precision;
    j["threads"] = r.threads;
    j["layers_measured"] = r.layers_measured;
    j["layers_total"] = r.layers_total;
    j["repeats"] = r.repeats > 0 ? Json(r.repeats) : Json(nullptr);  // null: a saved kvplan-gpu-bench file does not say
    j["measured_bandwidth_bytes_per_s"] = r.read_bytes_per_s;
    j["measured_flop_per_s"] = r.flops_per_s;
    // null: these kernels run without an engine's scheduler, sampler or
    // launches between steps, so the engine profile's per-step cost stays
    // (a calibration replaces bandwidth and FLOP/s, not the engine).
    j["step_overhead_s"] = nullptr;
    j["stream"] = {{"array_bytes", r.stream_array_bytes},
                   {"read", rate_json(r.read_bytes_per_s, r.read_range, "bytes_per_s")},
                   {"copy", rate_json(r.copy_bytes_per_s, r.copy_range, "bytes_per_s")}};
    if (r.threads > 0) j["stream"]["triad"] = rate_json(r.triad_bytes_per_s, r.triad_range, "bytes_per_s");
    j["matrix_product"] = rate_json(r.flops_per_s, r.flops_range, "flop_per_s");
    j["engine"] = r.engine.empty() ? Json(nullptr) : Json(r.engine);  // --engine: the profile engine_predicted_s comes from
    j["engine_device"] = r.engine.empty() ? Json(nullptr) : Json(r.engine_device);
    j["decode"] = steps_json(r.decode, "context_tokens");
    j["prefill"] = steps_json(r.prefill, "prompt_tokens");
    j["warnings"] = r.warnings;
    j["notes"] = r.notes;
    return json_text(j);
}

}  // namespace kvplan
