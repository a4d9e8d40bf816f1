// `--report FILE.html` of `simulate`, `roofline` and `recommend --slo`: one
// self-contained page (no scripts, no external fonts, styles or images)
// holding the command's text output and its charts (io/plot_files.hpp)
// inline, so that it can be shared as one file and opened in any browser.
#pragma once

#include <string>
#include <vector>

#include "report/plot_files.hpp"

namespace kvplan {

// `title` as the page's <title> and heading, `text` (what the command
// printed) HTML-escaped in a <pre>, then each .svg of `charts` inline, in
// order, without its XML declaration; other files (the CSVs) are left out.
std::string render_html_report(const std::string& title, const std::string& text, const std::vector<PlotFile>& charts);

// The titles: the command, the model and the device(s).
std::string simulate_report_title(const SimulateResult& r);
std::string roofline_report_title(const RooflineResult& r);
std::string recommend_report_title(const SloRecommendResult& r);

}  // namespace kvplan
