#include "report/plot_files.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "core/digits.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/pareto.hpp"
#include "core/speed/step_cost.hpp"
#include "io/file_writer.hpp"
#include "report/printable.hpp"
#include "report/svg_chart.hpp"

namespace kvplan {

namespace {

// A value as the CSV prints it, so that the chart draws exactly the CSV's numbers.
double rounded(double v, int decimals) {
    return std::stod(fmt::format("{:.{}f}", v, decimals));
}

// "llama-3.1-8b (meta-llama/Llama-3.1-8B-Instruct, llama)" -> "llama-3.1-8b": a title fits one line.
std::string short_model(const std::string& label) {
    return label.substr(0, label.find(" ("));
}

std::string engine_title(const std::string& engine) {
    return engine == "sglang" ? "SGLang" : "vLLM";
}

std::string seconds_label(double s) {
    return fmt::format("SLO {:g} s", s);
}

// Up to kMaxPlotPoints indices of [0, n): all of them, or evenly spaced
// ranks from the first to the last (index round(j (n-1) / (k-1))).
std::vector<std::size_t> thin(std::size_t n) {
    std::vector<std::size_t> out;
    if (n <= kMaxPlotPoints) {
        for (std::size_t i = 0; i < n; ++i) out.push_back(i);
        return out;
    }
    for (std::size_t j = 0; j < kMaxPlotPoints; ++j)
        out.push_back(
            static_cast<std::size_t>(std::llround(static_cast<double>(j) * static_cast<double>(n - 1) / static_cast<double>(kMaxPlotPoints - 1))));
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
        out += c.count > c.value_s.size() ? fmt::format("; {}: {} of {} values, evenly spaced ranks", c.metric, c.value_s.size(),
                                                        group_digits(static_cast<std::int64_t>(c.count)))
                                          : fmt::format("; {}: all {} values", c.metric, c.count);
    out += "\nmetric,value_s,cumulative_fraction\n";
    for (const Cdf& c : cdfs)
        for (std::size_t i = 0; i < c.value_s.size(); ++i) out += fmt::format("{},{:.6f},{:.6f}\n", c.metric, c.value_s[i], c.fraction[i]);
    return {"latency_cdf.csv", out};
}

// The front as a line through the points it keeps, left to right.
ChartSeries front_series(const std::vector<ParetoPoint>& pts, const std::vector<std::size_t>& front) {
    ChartSeries s{"Pareto front", {}, {}, false};
    s.colour = "#333333";
    for (std::size_t i : front) {
        s.x.push_back(pts[i].x);
        s.y.push_back(pts[i].y);
    }
    return s;
}

std::vector<bool> on_front(std::size_t n, const std::vector<std::size_t>& front) {
    std::vector<bool> out(n, false);
    for (std::size_t i : front) out[i] = true;
    return out;
}

// roofline's pareto.{svg,csv}: each batch's decode as tokens/s per user
// (1 / step) and tokens/s per GPU (batch / step over the replica's GPUs,
// as the $/M column divides them); the front over the batches that fit.
std::vector<PlotFile> roofline_pareto(const RooflineResult& r) {
    const CostModel& m = r.cost;
    const std::int64_t gpus = m.layout.active() ? m.layout.gpus : m.tp;
    std::vector<ParetoPoint> pts, fitting;
    std::vector<std::size_t> fitting_index;
    ChartSeries fits{"fits in memory", {}, {}, false}, over{"exceeds memory", {}, {}, false};
    fits.markers = over.markers = true;
    fits.colour = "#1f77b4";
    over.colour = "#bbbbbb";
    for (const RooflineRow& row : r.roofline.rows) {
        const ParetoPoint p{rounded(row.tokens_per_s_per_user, 3), rounded(row.tokens_per_s_total / static_cast<double>(gpus), 2)};
        pts.push_back(p);
        if (row.fits) {
            fitting.push_back(p);
            fitting_index.push_back(pts.size() - 1);
        }
        ChartSeries& s = row.fits ? fits : over;
        s.x.push_back(p.x);
        s.y.push_back(p.y);
        s.labels.push_back(std::to_string(row.batch));
    }
    // When no batch fits (a model too large for the device at this context) the front is drawn over them all.
    std::vector<std::size_t> front;
    if (fitting.empty()) front = pareto_front(pts);
    for (std::size_t k : fitting.empty() ? std::vector<std::size_t>{} : pareto_front(fitting)) front.push_back(fitting_index[k]);
    const std::vector<bool> kept = on_front(pts.size(), front);
    std::string csv = fmt::format(
        "# decode at {} tokens of context per batch: tokens/s per user = 1 / step, tokens/s per GPU = batch / step / {} GPU{}; "
        "the front joins the batches that fit (all of them when none fits) that no other beats on both\n",
        r.inputs.context, gpus, gpus > 1 ? "s" : "");
    csv += "batch,step_ms,tokens_per_s_per_user,tokens_per_s_per_gpu,fits,on_front\n";
    for (std::size_t i = 0; i < pts.size(); ++i) {
        const RooflineRow& row = r.roofline.rows[i];
        csv +=
            fmt::format("{},{:.4f},{:.3f},{:.2f},{},{}\n", row.batch, row.step.total_s * 1e3, pts[i].x, pts[i].y, row.fits ? 1 : 0, kept[i] ? 1 : 0);
    }
    Chart c;
    c.title = fmt::format("Decode throughput against speed: {} on {}, TP {}", short_model(r.model_label), r.gpu.name, m.tp);
    ChartPanel p;
    p.title = fmt::format("roofline, any engine: one point per batch (labelled, {} to {}), {} tokens of context",
                          r.roofline.rows.empty() ? 0 : r.roofline.rows.front().batch, r.roofline.rows.empty() ? 0 : r.roofline.rows.back().batch,
                          group_digits(r.inputs.context));
    p.x_label = "tokens/s per user (1 / step time)";
    p.y_label = "output tokens/s per GPU";
    p.series.push_back(front_series(pts, front));
    p.series.push_back(std::move(fits));
    if (!over.x.empty()) p.series.push_back(std::move(over));
    c.panels.push_back(std::move(p));
    return {{"pareto.svg", render_svg(c)}, {"pareto.csv", csv}};
}

// The colour group of the Pareto chart: the device and its layout, "h100-sxm TP 2", "l40s TP 2 PP 2",
// or "h200 DP 8 + EP 8" for DP attention with expert parallelism (TP 1 a rank; the recommend table's words).
std::string gpu_tp(const SloCandidate& c) {
    if (c.pd()) return unit_sides(c);
    if (c.dp > 1) return fmt::format("{} DP {} + EP {}", c.gpu, c.dp, c.dp);
    return c.pp > 1 ? fmt::format("{} TP {} PP {}", c.gpu, c.tp, c.pp) : fmt::format("{} TP {}", c.gpu, c.tp);
}

// "h100-sxm TP 1 default", "l40s TP 2 PP 2 default", "h200 DP 8 + EP 8 default" or "h100-sxm TP 1/2 1P:3D",
// with the KV dtype and weight format when the search tried more than one; no commas (a CSV field).
std::string candidate_label(const SloRecommendResult& r, const SloCandidate& c) {
    std::string out = c.pd() ? fmt::format("{} {}P:{}D", unit_sides(c), c.prefill_replicas, c.decode_replicas) : gpu_tp(c) + " " + c.knobs;
    if (r.kv_axis) out += " kv=" + c.kv_dtype_flag;
    if (r.weights_axis) out += " w=" + c.weights_flag;
    return out;
}

std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
    return out;
}

// recommend's goodput.{svg,csv}: one panel per curve, the candidates in rank order.
std::vector<PlotFile> goodput_plot(const SloRecommendResult& r) {
    std::string csv = fmt::format(
        "# each candidate replayed at multiples of the rate the search chose (multiple 1.000), every run to its end; "
        "goodput counts the requests meeting every SLO; the knee (knee 1) is the highest offered rate whose goodput "
        "share is at least {:g}%\n",
        r.goodput * 100);
    csv += "rank,candidate,multiple,offered_rps,throughput_rps,goodput_rps,goodput_share,knee\n";
    Chart c;
    c.title = fmt::format("Throughput and goodput against offered rate: {}, {}", r.base.model, engine_title(r.engine));
    for (std::size_t k = 0; k < r.curves.size() && k < r.qualified.size(); ++k) {
        const GoodputCurve& g = r.curves[k];
        const std::string label = candidate_label(r, r.qualified[k]);
        ChartSeries through{"throughput", {}, {}, false}, good{"goodput", {}, {}, false}, offered{"offered (y = x)", {}, {}, false};
        through.colour = "#1f77b4";
        good.colour = "#2ca02c";
        offered.colour = "#999999";
        offered.dashed = true;
        for (std::size_t i = 0; i < g.points.size(); ++i) {
            const GoodputPoint& q = g.points[i];
            csv += fmt::format("{},{},{:.3f},{:.4f},{:.4f},{:.4f},{:.4f},{}\n", k + 1, csv_cell(label), q.multiple, q.offered_rps, q.throughput_rps,
                               q.goodput_rps, q.goodput_share, g.knee == i ? 1 : 0);
            const double x = rounded(q.offered_rps, 4);
            offered.x.push_back(x);
            offered.y.push_back(x);
            through.x.push_back(x);
            through.y.push_back(rounded(q.throughput_rps, 4));
            good.x.push_back(x);
            good.y.push_back(rounded(q.goodput_rps, 4));
        }
        ChartPanel p;
        p.x_label = "offered rate (req/s)";
        p.y_label = "requests/s";
        p.series = {std::move(offered), std::move(through), std::move(good)};
        const double chosen = rounded(g.chosen_rps, 4);
        p.refs.push_back({true, chosen, fmt::format("chosen {:.2f} req/s", g.chosen_rps)});
        if (g.knee) {
            const GoodputPoint& q = g.points[*g.knee];
            p.refs.push_back(
                {true, rounded(q.offered_rps, 4), fmt::format("knee {:.2f} req/s ({:.1f}% good)", q.offered_rps, q.goodput_share * 100), 1});
        }
        p.title = fmt::format("#{} {}: chosen {:.2f} req/s, knee {}", k + 1, label, g.chosen_rps,
                              g.knee ? fmt::format("{:.2f} req/s", g.points[*g.knee].offered_rps) : std::string("none"));
        c.panels.push_back(std::move(p));
    }
    return {{"goodput.svg", render_svg(c)}, {"goodput.csv", csv}};
}

// recommend's pareto.{svg,csv}: every qualifying candidate at its chosen
// rate, as simulated there on one replica.
std::vector<PlotFile> recommend_pareto(const SloRecommendResult& r) {
    std::vector<ParetoPoint> pts;
    std::vector<std::string> groups;  // in order of first appearance: the best's first
    std::string csv =
        "# every qualifying candidate at its chosen rate on one replica (unit): tokens/s per user = 1 / TPOT p50, "
        "output tokens/s per GPU = output tokens/s over its GPUs; the front joins those no other beats on both\n";
    csv += "rank,candidate,gpus,rate_rps,tpot_p50_ms,tokens_per_s_per_user,output_tokens_per_s_per_gpu,on_front\n";
    for (const SloCandidate& c : r.qualified) {
        const SimSummary& s = c.outcome.at_max;
        pts.push_back(
            {rounded(s.tpot_s.p50 > 0 ? 1 / s.tpot_s.p50 : 0, 3), rounded(s.output_tokens_per_s / static_cast<double>(c.gpus_per_replica()), 2)});
        if (std::find(groups.begin(), groups.end(), gpu_tp(c)) == groups.end()) groups.push_back(gpu_tp(c));
    }
    const std::vector<std::size_t> front = pareto_front(pts);
    const std::vector<bool> kept = on_front(pts.size(), front);
    std::vector<ChartSeries> by_group;
    for (const std::string& g : groups) {
        by_group.push_back({g, {}, {}, false});
        by_group.back().markers = true;
    }
    for (std::size_t i = 0; i < r.qualified.size(); ++i) {
        const SloCandidate& c = r.qualified[i];
        csv += fmt::format("{},{},{},{:.4f},{:.3f},{:.3f},{:.2f},{}\n", i + 1, csv_cell(candidate_label(r, c)), c.gpus_per_replica(),
                           c.outcome.max_rate_rps, c.outcome.at_max.tpot_s.p50 * 1e3, pts[i].x, pts[i].y, kept[i] ? 1 : 0);
        ChartSeries& s = by_group[static_cast<std::size_t>(std::find(groups.begin(), groups.end(), gpu_tp(c)) - groups.begin())];
        s.x.push_back(pts[i].x);
        s.y.push_back(pts[i].y);
    }
    Chart chart;
    chart.title = fmt::format("Output tokens/s per GPU against tokens/s per user: {}, {}", r.base.model, engine_title(r.engine));
    ChartPanel p;
    p.title = fmt::format("{} qualifying candidate{} at their chosen rates, of {}", r.qualified.size(), r.qualified.size() == 1 ? "" : "s",
                          joined(r.gpu_ids));
    p.x_label = "tokens/s per user (1 / TPOT p50)";
    p.y_label = "output tokens/s per GPU";
    p.series.push_back(front_series(pts, front));
    for (ChartSeries& s : by_group) p.series.push_back(std::move(s));
    chart.panels.push_back(std::move(p));
    return {{"pareto.svg", render_svg(chart)}, {"pareto.csv", csv}};
}

// --compare: the served run's measured CDFs (dashed, beside each simulated
// one, and in the CSV as ttft_measured...) and vLLM's per-second log
// (dashed, in timeseries_measured.csv), so that both runs read on one chart.
// Legends stay as short as the simulated ones: the legend column is 200 px.
void add_measured(const ServedComparison& c, std::vector<Cdf>& cdfs, Chart& cdf_chart, Chart& ts_chart, std::vector<PlotFile>& files) {
    std::vector<double> ttft, tpot, e2e;
    for (const MeasuredRequest& m : c.requests) {
        ttft.push_back(m.ttft_s);
        e2e.push_back(m.e2e_s);
        if (m.output_tokens > 1) tpot.push_back((m.e2e_s - m.ttft_s) / static_cast<double>(m.output_tokens - 1));
    }
    const std::vector<std::pair<std::string, std::vector<double>*>> metrics = {{"ttft", &ttft}, {"tpot", &tpot}, {"e2e", &e2e}};
    for (std::size_t k = 0; k < metrics.size(); ++k) {
        const std::string metric = metrics[k].first + "_measured";
        Cdf m = empirical_cdf(metric, std::move(*metrics[k].second));
        ChartSeries s{"measured", m.value_s, m.fraction, false};
        s.dashed = true;
        cdf_chart.panels[k].series.push_back(std::move(s));
        cdfs.push_back(std::move(m));
    }
    if (c.series.empty()) return;
    std::string csv = "t_s,running,waiting,kv_cache_usage\n";
    ChartSeries kv{"KV usage, vLLM", {}, {}, false}, running{"running, vLLM", {}, {}, false}, waiting{"waiting, vLLM", {}, {}, false};
    for (std::size_t i : thin(c.series.size())) {
        const MeasuredSecond& m = c.series[i].measured;
        csv += fmt::format("{:.0f},{},{},{}\n", m.t_s, m.running, m.waiting, c.series_kv ? fmt::format("{:.4f}", m.kv_cache_usage) : "");
        kv.x.push_back(m.t_s);
        kv.y.push_back(rounded(m.kv_cache_usage, 4));
        running.x.push_back(m.t_s);
        running.y.push_back(static_cast<double>(m.running));
        waiting.x.push_back(m.t_s);
        waiting.y.push_back(static_cast<double>(m.waiting));
    }
    for (ChartSeries* s : {&kv, &running, &waiting}) s->dashed = true;
    if (c.series_kv) ts_chart.panels[0].series.push_back(std::move(kv));
    ts_chart.panels[1].series.push_back(std::move(running));
    ts_chart.panels[1].series.push_back(std::move(waiting));
    files.push_back({"timeseries_measured.csv", csv});
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
    std::vector<Cdf> cdfs = {empirical_cdf("ttft", std::move(ttft)), empirical_cdf("tpot", std::move(tpot)), empirical_cdf("e2e", std::move(e2e))};
    // The title names the replicas, as the summary does: "on 4 replicas of NVIDIA H100 SXM 80GB".
    const std::size_t replicas = r.run.replicas.size();
    const std::string where =
        r.disagg ? fmt::format("{} prefill + {} decode replicas of {}", r.disagg->prefill.stats.size(), r.disagg->decode.stats.size(), r.gpu_name)
        : replicas > 1 ? fmt::format("{} replicas of {}", replicas, r.gpu_name)
                       : r.gpu_name;
    const std::string who = fmt::format("{} on {}, {}", short_model(r.model_label), where, engine_title(r.engine));

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
        p.y_max = 1;
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
    std::string csv = keep.size() < seconds ? fmt::format("# {} of {} per-second samples, evenly spaced from the first to the last\n", keep.size(),
                                                          group_digits(static_cast<std::int64_t>(seconds)))
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
    kv_panel.y_max = 1;
    kv_panel.series.push_back(std::move(kv));
    kv_panel.refs.push_back({false, 1.0, "pool full"});
    ChartPanel req_panel;
    req_panel.title = "Requests running and waiting";
    req_panel.x_label = "time (s)";
    req_panel.y_label = "requests";
    req_panel.series.push_back(std::move(running));
    req_panel.series.push_back(std::move(waiting));
    ts_chart.panels = {std::move(kv_panel), std::move(req_panel)};

    std::vector<PlotFile> files;
    if (r.compare) add_measured(*r.compare, cdfs, cdf_chart, ts_chart, files);
    files.insert(
        files.begin(),
        {{"latency_cdf.svg", render_svg(cdf_chart)}, latency_cdf_csv(cdfs), {"timeseries.svg", render_svg(ts_chart)}, {"timeseries.csv", csv}});
    return files;
}

std::vector<PlotFile> render_roofline_plots(const RooflineResult& r) {
    // The terms of StepCost (core/speed/step_cost.cpp, finish): memory time
    // is weights over the weights bandwidth plus KV over the KV bandwidth;
    // the step is max(memory, compute) + overhead + all-reduce.
    const CostModel& m = r.cost;
    ChartSeries total{"step", {}, {}, false}, weights{"weights", {}, {}, false}, kv{"KV cache", {}, {}, false}, compute{"compute", {}, {}, false},
        overhead{"overhead", {}, {}, false}, allreduce{"all-reduce", {}, {}, false};
    std::string csv = "batch,context_tokens,step_ms,weights_ms,kv_ms,compute_ms,overhead_ms,allreduce_ms\n";
    bool any_allreduce = false;
    std::int64_t lo = 0, hi = 0;
    for (const RooflineRow& row : r.roofline.rows) {
        const StepCost& s = row.step;
        const double b = static_cast<double>(row.batch);
        const double vals[] = {s.total_s * 1e3,
                               s.weight_bytes / m.weights_bandwidth_bytes_per_s * 1e3,
                               (s.kv_read_bytes + s.kv_write_bytes) / m.bandwidth_bytes_per_s * 1e3,
                               s.compute_s * 1e3,
                               s.overhead_s * 1e3,
                               s.allreduce_s * 1e3};
        csv += fmt::format("{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f}\n", row.batch, row.context, vals[0], vals[1], vals[2], vals[3], vals[4],
                           vals[5]);
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
    std::string head = any_allreduce ? "# decode step time and its terms per batch (ms)\n"
                                     : "# decode step time and its terms per batch (ms); no all-reduce at TP 1 (column is 0, not drawn)\n";
    std::vector<PlotFile> out = {{"step_time.svg", render_svg(c)}, {"step_time.csv", head + csv}};
    for (PlotFile& f : roofline_pareto(r)) out.push_back(std::move(f));
    return out;
}

std::vector<PlotFile> render_recommend_plots(const SloRecommendResult& r) {
    if (r.qualified.empty()) return {};
    std::vector<PlotFile> out = goodput_plot(r);
    for (PlotFile& f : recommend_pareto(r)) out.push_back(std::move(f));
    return out;
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
