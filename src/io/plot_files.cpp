#include "io/plot_files.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "core/digits.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/speed/step_cost.hpp"
#include "io/file_writer.hpp"
#include "io/svg_chart.hpp"

namespace kvplan {

namespace {

// A value as the CSV prints it, so that the chart draws exactly the CSV's numbers.
double rounded(double v, int decimals) { return std::stod(fmt::format("{:.{}f}", v, decimals)); }

// "llama-3.1-8b (meta-llama/Llama-3.1-8B-Instruct, llama)" -> "llama-3.1-8b": a title fits one line.
std::string short_model(const std::string& label) { return label.substr(0, label.find(" (")); }

std::string engine_title(const std::string& engine) { return engine == "sglang" ? "SGLang" : "vLLM"; }

std::string seconds_label(double s) { return fmt::format("SLO {:g} s", s); }

// Up to kMaxPlotPoints indices of [0, n): all of them, or evenly spaced
// ranks from the first to the last (index round(j (n-1) / (k-1))).
std::vector<std::size_t> thin(std::size_t n) {
    std::vector<std::size_t> out;
    if (n <= kMaxPlotPoints) {
        for (std::size_t i = 0; i < n; ++i) out.push_back(i);
        return out;
    }
    for (std::size_t j = 0; j < kMaxPlotPoints; ++j)
        out.push_back(static_cast<std::size_t>(std::llround(static_cast<double>(j) * static_cast<double>(n - 1) /
                                                            static_cast<double>(kMaxPlotPoints - 1))));
    return out;
}

struct Cdf {
    std::string metric;
    std::vector<double> value_s, fraction;
    std::size_t count = 0;  // before thinning
};

// The empirical CDF of `v`: the i-th smallest value (0-based) at (i + 1) / n.
Cdf empirical_cdf(const std::string& metric, std::vector<double> v) {
    std::sort(v.begin(), v.end());
    Cdf c{metric, {}, {}, v.size()};
    for (std::size_t i : thin(v.size())) {
        c.value_s.push_back(rounded(v[i], 6));
        c.fraction.push_back(rounded(static_cast<double>(i + 1) / static_cast<double>(v.size()), 6));
    }
    return c;
}

PlotFile latency_cdf_csv(const std::vector<Cdf>& cdfs) {
    std::string out = "# empirical CDFs of completed requests";
    for (const Cdf& c : cdfs)
        out += c.count > c.value_s.size() ? fmt::format("; {}: {} of {} values, evenly spaced ranks", c.metric, c.value_s.size(), group_digits(static_cast<std::int64_t>(c.count)))
                                          : fmt::format("; {}: all {} values", c.metric, c.count);
    out += "\nmetric,value_s,cumulative_fraction\n";
    for (const Cdf& c : cdfs)
        for (std::size_t i = 0; i < c.value_s.size(); ++i) out += fmt::format("{},{:.6f},{:.6f}\n", c.metric, c.value_s[i], c.fraction[i]);
    return {"latency_cdf.csv", out};
}

}  // namespace

std::vector<PlotFile> render_simulate_plots(const SimulateResult& r) {
    // Per request, as metrics.cpp (summarise) and vllm/benchmarks/serve.py
    // (calculate_metrics) define them: completed requests only; TPOT for
    // those with more than one output token.
    std::vector<double> ttft, tpot, e2e;
    for (const RequestRecord& q : r.run.requests) {
        if (q.rejected || q.finish_s < 0) continue;
        ttft.push_back(q.first_token_s - q.arrival_s);
        e2e.push_back(q.finish_s - q.arrival_s);
        if (q.output_tokens > 1) tpot.push_back((q.finish_s - q.first_token_s) / static_cast<double>(q.output_tokens - 1));
    }
    const std::vector<Cdf> cdfs = {empirical_cdf("ttft", std::move(ttft)), empirical_cdf("tpot", std::move(tpot)),
                                   empirical_cdf("e2e", std::move(e2e))};
    const std::string who = fmt::format("{} on {}, {}", short_model(r.model_label), r.gpu_name, engine_title(r.engine));

    Chart cdf_chart;
    cdf_chart.title = "Latency CDFs: " + who;
    const std::vector<std::optional<double>> slos = {r.slo.ttft_s, r.slo.tpot_s, r.slo.e2e_s};
    const std::vector<std::string> names = {"TTFT", "TPOT", "E2E"};
    const std::vector<std::string> long_names = {"time to first token", "time per output token", "end-to-end latency"};
    for (std::size_t k = 0; k < cdfs.size(); ++k) {
        ChartPanel p;
        p.title = fmt::format("{} ({}), {} requests", names[k], long_names[k], group_digits(static_cast<std::int64_t>(cdfs[k].count)));
        p.x_label = names[k] + " (s)";
        p.y_label = "fraction of requests";
        p.series.push_back({names[k], cdfs[k].value_s, cdfs[k].fraction, false});
        if (slos[k]) p.refs.push_back({true, *slos[k], seconds_label(*slos[k])});
        cdf_chart.panels.push_back(std::move(p));
    }

    // The per-second series of --timeseries-csv, thinned to kMaxPlotPoints samples.
    // The series holds equal seconds in a row as one point (TimePoint::seconds):
    // second i is found by walking the points, never expanding them.
    const std::vector<TimePoint>& ts = r.run.timeseries;
    std::size_t seconds = 0;
    for (const TimePoint& p : ts) seconds += static_cast<std::size_t>(p.seconds);
    const std::vector<std::size_t> keep = thin(seconds);
    std::string csv = keep.size() < seconds
                          ? fmt::format("# {} of {} per-second samples, evenly spaced from the first to the last\n", keep.size(), group_digits(static_cast<std::int64_t>(seconds)))
                          : fmt::format("# all {} per-second samples\n", seconds);
    csv += "t_s,running,waiting,kv_cache_usage,prompt_tokens_per_s,generation_tokens_per_s\n";
    ChartSeries kv{"KV-cache usage", {}, {}, false}, running{"running", {}, {}, false}, waiting{"waiting", {}, {}, false};
    std::size_t point = 0, first_second = 0;  // ts[point] covers seconds first_second .. + its count - 1
    for (std::size_t i : keep) {
        while (i >= first_second + static_cast<std::size_t>(ts[point].seconds)) first_second += static_cast<std::size_t>(ts[point++].seconds);
        const TimePoint& p = ts[point];
        const double t_s = p.t_s + static_cast<double>(i - first_second);
        csv += fmt::format("{:.0f},{},{},{:.4f},{:.0f},{:.0f}\n", t_s, p.running, p.waiting, p.kv_cache_usage, p.prompt_tokens_per_s,
                           p.generation_tokens_per_s);
        const double t = rounded(t_s, 0);
        kv.x.push_back(t);
        kv.y.push_back(rounded(p.kv_cache_usage, 4));
        running.x.push_back(t);
        running.y.push_back(static_cast<double>(p.running));
        waiting.x.push_back(t);
        waiting.y.push_back(static_cast<double>(p.waiting));
    }
    Chart ts_chart;
    ts_chart.title = "Over time: " + who;
    ChartPanel kv_panel;
    kv_panel.title = fmt::format("KV-cache usage ({} blocks)", group_digits(r.run.total_blocks));
    kv_panel.x_label = "time (s)";
    kv_panel.y_label = "share of KV blocks used";
    kv_panel.series.push_back(std::move(kv));
    kv_panel.refs.push_back({false, 1.0, "pool full"});
    ChartPanel req_panel;
    req_panel.title = "Requests running and waiting";
    req_panel.x_label = "time (s)";
    req_panel.y_label = "requests";
    req_panel.series.push_back(std::move(running));
    req_panel.series.push_back(std::move(waiting));
    ts_chart.panels = {std::move(kv_panel), std::move(req_panel)};

    return {{"latency_cdf.svg", render_svg(cdf_chart)}, latency_cdf_csv(cdfs), {"timeseries.svg", render_svg(ts_chart)}, {"timeseries.csv", csv}};
}

std::vector<PlotFile> render_roofline_plots(const RooflineResult& r) {
    // The terms of StepCost (core/speed/step_cost.cpp, finish): memory time
    // is weights over the weights bandwidth plus KV over the KV bandwidth;
    // the step is max(memory, compute) + overhead + all-reduce.
    const CostModel& m = r.cost;
    ChartSeries total{"step", {}, {}, false}, weights{"weights", {}, {}, false}, kv{"KV cache", {}, {}, false},
        compute{"compute", {}, {}, false}, overhead{"overhead", {}, {}, false}, allreduce{"all-reduce", {}, {}, false};
    std::string csv = "batch,context_tokens,step_ms,weights_ms,kv_ms,compute_ms,overhead_ms,allreduce_ms\n";
    bool any_allreduce = false;
    std::int64_t lo = 0, hi = 0;
    for (const RooflineRow& row : r.roofline.rows) {
        const StepCost& s = row.step;
        const double b = static_cast<double>(row.batch);
        const double vals[] = {s.total_s * 1e3, s.weight_bytes / m.weights_bandwidth_bytes_per_s * 1e3,
                               (s.kv_read_bytes + s.kv_write_bytes) / m.bandwidth_bytes_per_s * 1e3, s.compute_s * 1e3, s.overhead_s * 1e3,
                               s.allreduce_s * 1e3};
        csv += fmt::format("{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f}\n", row.batch, row.context, vals[0], vals[1], vals[2], vals[3], vals[4], vals[5]);
        ChartSeries* series[] = {&total, &weights, &kv, &compute, &overhead, &allreduce};
        for (int k = 0; k < 6; ++k) {
            series[k]->x.push_back(b);
            series[k]->y.push_back(rounded(vals[k], 4));
        }
        any_allreduce = any_allreduce || s.allreduce_s > 0;
        lo = lo == 0 ? row.batch : std::min(lo, row.batch);
        hi = std::max(hi, row.batch);
    }
    Chart c;
    c.title = fmt::format("Decode step time: {} on {}, TP {}", short_model(r.model_label), r.gpu.name, m.tp);
    ChartPanel p;
    p.title = fmt::format("roofline, any engine: weights {}, KV {}, {} tokens of context", r.weights_label, dtype_name(m.kv_dtype),
                          group_digits(r.inputs.context));
    p.x_label = "batch (sequences decoded together)";
    p.y_label = "time per step (ms)";
    p.log_x = lo > 0 && hi >= 10 * lo;  // batches 1, 2, 4 ... 512 spread evenly
    p.series = {total, weights, kv, compute, overhead};
    if (any_allreduce) p.series.push_back(allreduce);
    if (r.roofline.max_batch && *r.roofline.max_batch >= lo && *r.roofline.max_batch <= hi && *r.roofline.max_batch > 0)
        p.refs.push_back({true, static_cast<double>(*r.roofline.max_batch), fmt::format("{} fit in memory", group_digits(*r.roofline.max_batch))});
    c.panels.push_back(std::move(p));
    std::string head = any_allreduce ? "# decode step time and its terms per batch (ms)\n" : "# decode step time and its terms per batch (ms); no all-reduce at TP 1 (column is 0, not drawn)\n";
    return {{"step_time.svg", render_svg(c)}, {"step_time.csv", head + csv}};
}

void prepare_plot_dir(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status st = fs::status(dir, ec);
    if (fs::exists(st) && !fs::is_directory(st)) usage_error("--plot: " + dir + " exists and is not a folder; pass a folder (created when missing)");
    if (!fs::exists(st)) {
        fs::create_directories(dir, ec);
        if (ec) usage_error("--plot: cannot create the folder " + dir + ": " + ec.message());
    }
    check_writable((fs::path(dir) / "plot.svg").string());
}

void write_plot_files(const std::string& dir, const std::vector<PlotFile>& files) {
    for (const PlotFile& f : files) write_file_atomically((std::filesystem::path(dir) / f.name).string(), f.text);
}

}  // namespace kvplan
