#include "report/compare_report.hpp"

#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "report/table.hpp"

namespace kvplan {

namespace {

// A latency as the measured side reads best: seconds from 1 s, else milliseconds.
std::string latency(double s) {
    return s >= 1 ? fmt::format("{:.2f} s", s) : fmt::format("{:.1f} ms", s * 1e3);
}

std::string error_cell(double measured, double simulated) {
    const std::optional<double> e = relative_error(measured, simulated);
    return e ? fmt::format("{:+.1f}%", *e * 100) : "-";
}

void add_rows(Table& t, const char* name, const Distribution& m, const Distribution& s) {
    const std::pair<const char*, double Distribution::*> stats[] = {
        {"mean", &Distribution::mean}, {"p50", &Distribution::p50}, {"p90", &Distribution::p90}, {"p99", &Distribution::p99}};
    for (const auto& [stat, field] : stats) t.add({name, stat, latency(m.*field), latency(s.*field), error_cell(m.*field, s.*field)});
}

const char* clock_words(ServedClock c) {
    return c == ServedClock::Queued ? "from the server's queued_ts (TTFT = first_token_ts - queued_ts)"
                                    : "from the client's send, as vllm bench serve counts them";
}

// The mean of one field over the paired seconds.
double mean_of(const std::vector<SeriesPair>& series, bool simulated, double (*field)(const MeasuredSecond&)) {
    double sum = 0;
    for (const SeriesPair& p : series) sum += field(simulated ? p.simulated : p.measured);
    return series.empty() ? 0 : sum / static_cast<double>(series.size());
}

double running(const MeasuredSecond& m) {
    return static_cast<double>(m.running);
}
double waiting(const MeasuredSecond& m) {
    return static_cast<double>(m.waiting);
}
double kv_usage(const MeasuredSecond& m) {
    return m.kv_cache_usage;
}

std::string series_line(const std::vector<SeriesPair>& s, bool kv) {
    return fmt::format(
        "vLLM's per-second log ({} s) beside kvplan's, mean over those seconds: running {:.1f} vs {:.1f}, "
        "waiting {:.1f} vs {:.1f}, KV cache usage {}",
        s.size(), mean_of(s, false, running), mean_of(s, true, running), mean_of(s, false, waiting), mean_of(s, true, waiting),
        kv ? fmt::format("{:.1f}% vs {:.1f}%", mean_of(s, false, kv_usage) * 100, mean_of(s, true, kv_usage) * 100)
           : fmt::format("not logged (kvplan {:.1f}%)", mean_of(s, true, kv_usage) * 100));
}

nlohmann::ordered_json dist(const Distribution& d) {
    return {{"mean", d.mean}, {"p50", d.p50}, {"p90", d.p90}, {"p99", d.p99}, {"max", d.max}, {"count", d.count}};
}

nlohmann::ordered_json side(const ServedSummary& s, bool itl) {
    nlohmann::ordered_json j;
    j["ttft_s"] = dist(s.ttft_s);
    j["tpot_s"] = dist(s.tpot_s);
    j["itl_s"] = itl ? dist(s.itl_s) : nlohmann::ordered_json(nullptr);
    j["e2e_s"] = dist(s.e2e_s);
    j["throughput_output_tokens_per_s"] = s.output_tokens_per_s;
    j["requests_per_s"] = s.requests_per_s;
    return j;
}

nlohmann::ordered_json second(const MeasuredSecond& m, bool kv) {
    return {{"running", m.running},
            {"waiting", m.waiting},
            {"kv_cache_usage", kv ? nlohmann::ordered_json(m.kv_cache_usage) : nlohmann::ordered_json(nullptr)}};
}

nlohmann::ordered_json error_or_null(double m, double s) {
    const std::optional<double> e = relative_error(m, s);
    return e ? nlohmann::ordered_json(*e) : nlohmann::ordered_json(nullptr);
}

}  // namespace

std::string compare_sentence(const ServedComparison& c) {
    const std::optional<double> e2e = relative_error(c.measured.e2e_s.mean, c.simulated.e2e_s.mean);
    const std::optional<double> ttft = relative_error(c.measured.ttft_s.mean, c.simulated.ttft_s.mean);
    const std::optional<double> tpot = relative_error(c.measured.tpot_s.mean, c.simulated.tpot_s.mean);
    if (!e2e) return "The run measured no latency to compare against.";
    const auto pct = [](const std::optional<double>& x) { return x ? fmt::format("{:+.1f}%", *x * 100) : std::string("-"); };
    const std::string detail = fmt::format("(TTFT mean {}, TPOT mean {})", pct(ttft), pct(tpot));
    if (std::abs(*e2e) < 0.01) return "kvplan matches this run: its E2E mean is within 1% of the measured " + detail + ".";
    return fmt::format("kvplan is {} here: its E2E mean is {:.1f}% {} the measured {}.", *e2e > 0 ? "pessimistic" : "optimistic",
                       std::abs(*e2e) * 100, *e2e > 0 ? "above" : "below", detail);
}

std::string render_compare_table(const ServedComparison& c) {
    std::string out = fit_line(fmt::format("Measured beside simulated: latencies {}; TPOT over the tokens after the first{}.", clock_words(c.clock),
                                           c.failed > 0 ? fmt::format("; {} failed requests left out", c.failed) : ""),
                               Width::Fit);
    Table t({"figure", "stat", "measured", "kvplan", "error"}, 2);
    add_rows(t, "TTFT", c.measured.ttft_s, c.simulated.ttft_s);
    add_rows(t, "TPOT", c.measured.tpot_s, c.simulated.tpot_s);
    if (c.has_itl) add_rows(t, "ITL", c.measured.itl_s, c.simulated.itl_s);
    add_rows(t, "E2E", c.measured.e2e_s, c.simulated.e2e_s);
    t.add({"output", "tokens/s", fmt::format("{:.1f}", c.measured.output_tokens_per_s), fmt::format("{:.1f}", c.simulated.output_tokens_per_s),
           error_cell(c.measured.output_tokens_per_s, c.simulated.output_tokens_per_s)});
    t.add({"requests", "per s", fmt::format("{:.3f}", c.measured.requests_per_s), fmt::format("{:.3f}", c.simulated.requests_per_s),
           error_cell(c.measured.requests_per_s, c.simulated.requests_per_s)});
    out += t.render_text();
    if (!c.series.empty()) out += fit_line(series_line(c.series, c.series_kv), Width::Fit);
    out += "\n" + fit_line(compare_sentence(c), Width::Fit);
    return out;
}

nlohmann::ordered_json compare_json(const ServedComparison& c) {
    nlohmann::ordered_json j;
    j["measured_from"] = c.clock == ServedClock::Queued ? "queued" : "request_sent";
    j["failed_requests"] = c.failed;
    j["measured"] = side(c.measured, c.has_itl);
    j["simulated"] = side(c.simulated, c.has_itl);
    nlohmann::ordered_json e;
    e["ttft_mean"] = error_or_null(c.measured.ttft_s.mean, c.simulated.ttft_s.mean);
    e["tpot_mean"] = error_or_null(c.measured.tpot_s.mean, c.simulated.tpot_s.mean);
    e["itl_mean"] = c.has_itl ? error_or_null(c.measured.itl_s.mean, c.simulated.itl_s.mean) : nlohmann::ordered_json(nullptr);
    e["e2e_mean"] = error_or_null(c.measured.e2e_s.mean, c.simulated.e2e_s.mean);
    e["throughput_output_tokens_per_s"] = error_or_null(c.measured.output_tokens_per_s, c.simulated.output_tokens_per_s);
    j["relative_error"] = e;
    j["verdict"] = compare_sentence(c);
    nlohmann::ordered_json series = nlohmann::ordered_json::array();
    for (const SeriesPair& p : c.series)
        series.push_back({{"t_s", p.t_s}, {"measured", second(p.measured, c.series_kv)}, {"simulated", second(p.simulated, true)}});
    j["series"] = series;
    return j;
}

}  // namespace kvplan
