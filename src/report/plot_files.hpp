// `--plot DIR`: the charts of `simulate`, `roofline` and `recommend --slo`
// as SVG, each beside the CSV of exactly the points it draws
// (io/svg_chart.hpp).
#pragma once

#include <string>
#include <vector>

#include "report/roofline_report.hpp"
#include "report/simulate_report.hpp"
#include "report/slo_report.hpp"

namespace kvplan {

struct PlotFile {
    std::string name;  // e.g. "latency_cdf.svg"
    std::string text;
};

// Most points a series carries; longer ones are thinned deterministically
// and the CSV's first line says how.
inline constexpr std::size_t kMaxPlotPoints = 2000;

// latency_cdf.{svg,csv} and timeseries.{svg,csv}.
std::vector<PlotFile> render_simulate_plots(const SimulateResult& r);
// step_time.{svg,csv} and pareto.{svg,csv}.
std::vector<PlotFile> render_roofline_plots(const RooflineResult& r);
// goodput.{svg,csv} (from r.curves) and pareto.{svg,csv} (from r.qualified);
// nothing when no candidate qualified.
std::vector<PlotFile> render_recommend_plots(const SloRecommendResult& r);

// Before the work: creates `dir` when missing; throws Error(Usage) naming
// --plot when it exists and is not a folder or cannot be written.
void prepare_plot_dir(const std::string& dir);
// After it: each file written atomically (io/file_writer.hpp).
void write_plot_files(const std::string& dir, const std::vector<PlotFile>& files);

}  // namespace kvplan
