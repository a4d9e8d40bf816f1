#include "io/measure_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/table.hpp"
#include "io/units.hpp"

namespace kvplan {

namespace {

std::string ms(double s) { return fmt::format("{:.3f}", s * 1e3); }
std::string err(const MeasuredStep& m) { return fmt::format("{:+.1f}%", (m.predicted_s / m.measured_s - 1) * 100); }
std::string gbs(double bytes_per_s) { return fmt::format("{:.2f} GB/s", bytes_per_s / 1e9); }

Table steps_table(const std::vector<MeasuredStep>& steps, const char* tokens_header) {
    Table t({"batch", tokens_header, "predicted (ms)", "measured (ms)", "error", "achieved"}, 0);
    for (const MeasuredStep& m : steps)
        t.add({group_digits(m.batch), group_digits(m.tokens), ms(m.predicted_s), ms(m.measured_s), err(m), gbs(m.bytes / m.measured_s)});
    return t;
}

}  // namespace

std::string render_measure_table(const MeasureResult& r) {
    std::string out = fmt::format("kvplan measure: {} on {}, {} weights and KV, {} of {} layers timed and scaled\n", r.model, r.device, r.precision,
                                  r.layers_measured, r.layers_total);
    if (r.threads > 0)
        out += fmt::format("memory bandwidth (STREAM, {} per array, {} threads): read {}, copy {}, triad {}\n", binary_size(r.stream_array_bytes),
                           r.threads, gbs(r.read_bytes_per_s), gbs(r.copy_bytes_per_s), gbs(r.triad_bytes_per_s));
    else
        out += fmt::format("memory bandwidth (16-byte read and copy kernels over {}): read {}, copy {}\n", binary_size(r.stream_array_bytes),
                           gbs(r.read_bytes_per_s), gbs(r.copy_bytes_per_s));
    out += fmt::format("matrix products (the kernels' own rate): {:.1f} GFLOP/s\n\n", r.flops_per_s / 1e9);
    out += "Decode step (all layers; embedding and LM head excluded); predicted = roofline with the measured bandwidth and FLOP/s:\n";
    out += steps_table(r.decode, "context").render_text();
    if (!r.decode.empty()) {
        const MeasuredStep& m = r.decode.front();
        Table c({"component", "measured (ms)", "share", "bytes moved", "achieved", "of copy bandwidth"});
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
        out += fmt::format("\nComponents at batch {}, context {}:\n", m.batch, group_digits(m.tokens)) + c.render_text();
    }
    if (!r.prefill.empty()) {
        Table p({"prompt", "predicted (ms)", "measured (ms)", "error", "achieved", "of measured peak"}, 0);
        for (const MeasuredStep& m : r.prefill)
            p.add({group_digits(m.tokens), ms(m.predicted_s), ms(m.measured_s), err(m), fmt::format("{:.2f} TFLOP/s", m.flops / m.measured_s / 1e12),
                   fmt::format("{:.0f}%", m.flops / m.measured_s / r.flops_per_s * 100)});
        out += "\nPrefill (all layers):\n" + p.render_text();
    }
    for (const std::string& n : r.notes) out += "note: " + n + "\n";
    return out;
}

std::string render_measure_json(const MeasureResult& r) {
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["device"] = r.device;
    j["model"] = r.model;
    j["precision"] = r.precision;
    j["threads"] = r.threads;
    j["layers_measured"] = r.layers_measured;
    j["layers_total"] = r.layers_total;
    j["measured_bandwidth_bytes_per_s"] = r.read_bytes_per_s;
    j["measured_flops_per_s"] = r.flops_per_s;
    j["step_overhead_s"] = 0.0;
    j["stream"] = {{"array_bytes", r.stream_array_bytes}, {"read_bytes_per_s", r.read_bytes_per_s}, {"copy_bytes_per_s", r.copy_bytes_per_s},
                   {"triad_bytes_per_s", r.triad_bytes_per_s}};
    auto steps = [](const std::vector<MeasuredStep>& v, const char* tokens_key) {
        nlohmann::ordered_json a = nlohmann::ordered_json::array();
        for (const MeasuredStep& m : v) {
            nlohmann::ordered_json x;
            x["batch"] = m.batch;
            x[tokens_key] = m.tokens;
            x["predicted_s"] = m.predicted_s;
            x["measured_s"] = m.measured_s;
            x["bytes"] = m.bytes;
            x["flops"] = m.flops;
            a.push_back(x);
        }
        return a;
    };
    j["decode"] = steps(r.decode, "context_tokens");
    j["prefill"] = steps(r.prefill, "prompt_tokens");
    j["notes"] = r.notes;
    return j.dump(2) + "\n";
}

}  // namespace kvplan
