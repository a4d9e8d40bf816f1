// A small, self-contained SVG chart writer for `--plot`: line, step and
// scatter series on linear or logarithmic axes, ticks at round numbers (1-2-5
// steps), a title, a legend, vertical and horizontal reference lines, one or
// more panels stacked in one image. No scripts, no external fonts (the
// generic family `sans-serif`), numbers printed with fixed precision, so the
// same chart gives the same bytes.
//
// Each panel is a <g class="panel"> carrying its axis transform as data-*
// attributes (data x range, pixel range, log flag) and each series is a
// <polyline data-series="NAME"> (a scatter series: one <circle
// data-series="NAME"> per point), so a reader can map the points back to data.
#pragma once

#include <string>
#include <vector>

namespace kvplan {

struct ChartSeries {
    std::string name;                      // legend text
    std::vector<double> x, y;              // same length
    bool step = false;                     // hold y until the next x (a post step)
    bool markers = false;                  // a dot at each point and no line (a scatter)
    std::string colour = "";               // "#rrggbb"; empty: the palette's next colour
    bool dashed = false;                   // a dashed line (a reference drawn as a series, e.g. y = x)
    std::vector<std::string> labels = {};  // a scatter: a short text beside each point (e.g. its batch); may be empty
};

struct RefLine {
    bool vertical = true;  // x = at; else y = at
    double at = 0;
    std::string label;
    int label_row = 0;  // lines close together: each label one row lower than the last
};

struct ChartPanel {
    std::string title;             // above the panel (may be empty)
    std::string x_label, y_label;  // with units, e.g. "TTFT (s)"
    bool log_x = false;            // x values must then be > 0
    bool y_from_zero = true;       // the y axis starts at 0 (else at the data's minimum)
    double y_max = 0;              // the y axis ends here at most (a share: 1); 0: where the ticks end
    std::vector<ChartSeries> series;
    std::vector<RefLine> refs;
};

struct Chart {
    std::string title;
    std::vector<ChartPanel> panels;  // stacked top to bottom
};

// Round tick values covering [lo, hi]: steps of 1, 2 or 5 times a power of
// ten, about `target` intervals, from a multiple of the step at or below lo
// to one at or above hi (0..37 -> 0, 10, 20, 30, 40).
std::vector<double> linear_ticks(double lo, double hi, int target = 5);
// Ticks of a log axis within [lo, hi] (lo > 0): 1, 2 and 5 times each power
// of ten, thinned to powers of ten when the range spans more than 3 decades.
std::vector<double> log_ticks(double lo, double hi);
// A tick label: as many decimals as the step between ticks needs (0.05 -> 2).
std::string tick_label(double value, double step);

std::string render_svg(const Chart& chart);

// Geometry shared by the writer and the tests that read it back.
inline constexpr double kSvgWidth = 820;
inline constexpr double kPanelHeight = 260;

// Text and attribute values escaped for SVG and HTML: report/printable's
// markup_text (control characters as visible escapes, then & < > ", and ' with
// `apostrophe`, which HTML attributes in single quotes need).
std::string escape_markup(const std::string& s, bool apostrophe = false);

}  // namespace kvplan
