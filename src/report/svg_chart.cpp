#include "report/svg_chart.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "report/printable.hpp"

namespace kvplan {

std::string escape_markup(const std::string& s, bool apostrophe) {
    return markup_text(s, apostrophe);
}

namespace {

// Layout, in SVG user units (pixels at 100%).
constexpr double kTitleHeight = 40;
constexpr double kPlotLeft = 80;                // room for the y tick labels and the y label
constexpr double kPlotRight = kSvgWidth - 200;  // the legend sits to the right
constexpr double kPanelTop = 30;                // panel title above the plot
constexpr double kPanelBottom = 50;             // x tick labels and the x label below it
// Matplotlib's tab10, so that up to ten series (a scatter's GPU x TP groups) keep apart.
constexpr std::array<const char*, 10> kColours = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string escape(const std::string& s) {
    return escape_markup(s);
}

std::string px(double v) {
    return fmt::format("{:.2f}", v);
}

struct Axis {
    double lo = 0, hi = 1;      // data range
    double p_lo = 0, p_hi = 1;  // pixel range (p_lo maps lo)
    bool log = false;
    std::vector<double> ticks;
    double step = 1;  // linear tick step, for the labels
    double map(double v) const {
        const double f = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
        return p_lo + f * (p_hi - p_lo);
    }
};

// A linear axis whose end falls on a reference line gets one more tick, so
// that the line is not hidden by the frame.
Axis make_axis(double lo, double hi, bool log, double p_lo, double p_hi, const std::vector<double>& refs = {}) {
    Axis a;
    a.log = log;
    a.p_lo = p_lo;
    a.p_hi = p_hi;
    if (log) {
        if (!(hi > lo)) hi = lo * 10;
        a.lo = lo;
        a.hi = hi;
        a.ticks = log_ticks(lo, hi);
    } else {
        a.ticks = linear_ticks(lo, hi);
        a.lo = a.ticks.front();
        a.hi = a.ticks.back();
        a.step = a.ticks.size() > 1 ? a.ticks[1] - a.ticks[0] : 1;
        for (double r : refs)
            if (std::abs(r - a.ticks.back()) <= 1e-9 * std::max(1.0, std::abs(r))) {
                a.ticks.push_back(std::round(a.ticks.back() / a.step + 1) * a.step);
                a.hi = a.ticks.back();
                break;
            }
    }
    return a;
}

// The data range of a panel along x or y, with its reference lines.
std::pair<double, double> extent(const ChartPanel& p, bool x_axis) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const ChartSeries& s : p.series)
        for (double v : x_axis ? s.x : s.y) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    for (const RefLine& r : p.refs)
        if (r.vertical == x_axis) {
            lo = std::min(lo, r.at);
            hi = std::max(hi, r.at);
        }
    if (lo > hi) return {p.log_x && x_axis ? 1.0 : 0.0, p.log_x && x_axis ? 10.0 : 1.0};  // nothing to draw
    if (!x_axis && p.y_from_zero) lo = std::min(lo, 0.0);
    return {lo, hi};
}

// A line (or step) series as one polyline.
std::string polyline(const ChartSeries& s, const Axis& x, const Axis& y, const std::string& colour) {
    std::string points;
    auto add = [&](double vx, double vy) {
        if (!points.empty()) points += ' ';
        points += px(x.map(vx)) + "," + px(y.map(vy));
    };
    const std::size_t n = std::min(s.x.size(), s.y.size());
    for (std::size_t k = 0; k < n; ++k) {
        if (s.step && k > 0) add(s.x[k], s.y[k - 1]);
        add(s.x[k], s.y[k]);
    }
    return fmt::format("<polyline data-series=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\" stroke-linejoin=\"round\"{} points=\"{}\"/>\n",
                       escape(s.name), colour, s.dashed ? " stroke-dasharray=\"6 4\"" : "", points);
}

// A scatter series: one dot per point, each carrying the series' name (no
// <marker> definitions, whose ids would clash when several charts share one
// HTML page).
std::string scatter(const ChartSeries& s, const Axis& x, const Axis& y, const std::string& colour) {
    std::string out;
    const std::size_t n = std::min(s.x.size(), s.y.size());
    for (std::size_t k = 0; k < n; ++k) {
        out += fmt::format(
            "<circle data-series=\"{}\" cx=\"{}\" cy=\"{}\" r=\"4.5\" fill=\"{}\" fill-opacity=\"0.85\" stroke=\"#ffffff\" stroke-width=\"0.8\"/>\n",
            escape(s.name), px(x.map(s.x[k])), px(y.map(s.y[k])), colour);
        if (k < s.labels.size() && !s.labels[k].empty())
            out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" fill=\"#555555\">{}</text>\n", px(x.map(s.x[k]) + 6), px(y.map(s.y[k]) - 6),
                               escape(s.labels[k]));
    }
    return out;
}

// A share's axis stops at its whole (1, 100%): the ticks past it go, even the
// one make_axis adds above a reference line there ("pool full").
void cap_axis(Axis& a, double max) {
    if (max <= 0 || a.hi <= max) return;
    while (a.ticks.size() > 2 && a.ticks.back() > max * (1 + 1e-9)) a.ticks.pop_back();
    if (a.ticks.back() < max) a.ticks.push_back(max);
    a.hi = max;
}

std::string render_panel(const ChartPanel& p, double top, std::size_t first_colour) {
    const double plot_top = top + kPanelTop, plot_bottom = top + kPanelHeight - kPanelBottom;
    const auto [xlo, xhi] = extent(p, true);
    const auto [ylo, yhi] = extent(p, false);
    std::vector<double> x_refs, y_refs;
    for (const RefLine& r : p.refs) (r.vertical ? x_refs : y_refs).push_back(r.at);
    const Axis x = make_axis(xlo, xhi, p.log_x, kPlotLeft, kPlotRight, x_refs);
    Axis y = make_axis(ylo, yhi, false, plot_bottom, plot_top, y_refs);
    cap_axis(y, p.y_max);
    std::string out = fmt::format(
        "<g class=\"panel\" data-x0=\"{:.9g}\" data-x1=\"{:.9g}\" data-px0=\"{}\" data-px1=\"{}\" data-log-x=\"{}\" "
        "data-y0=\"{:.9g}\" data-y1=\"{:.9g}\" data-py0=\"{}\" data-py1=\"{}\">\n",
        x.lo, x.hi, px(x.p_lo), px(x.p_hi), p.log_x ? 1 : 0, y.lo, y.hi, px(y.p_lo), px(y.p_hi));
    if (!p.title.empty())
        out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"14\" font-weight=\"bold\">{}</text>\n", px(kPlotLeft), px(top + 18), escape(p.title));
    // Frame, grid and ticks.
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333333\"/>\n", px(kPlotLeft), px(plot_top),
                       px(kPlotRight - kPlotLeft), px(plot_bottom - plot_top));
    for (double t : x.ticks) {
        const double at = x.map(t);
        out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#e0e0e0\"/>\n", px(at), px(plot_top), px(plot_bottom));
        out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n", px(at), px(plot_bottom + 15),
                           tick_label(t, x.log ? t : x.step));
    }
    for (double t : y.ticks) {
        const double at = y.map(t);
        out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#e0e0e0\"/>\n", px(kPlotLeft), px(at), px(kPlotRight));
        out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n", px(kPlotLeft - 6), px(at + 4),
                           tick_label(t, y.step));
    }
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\n", px((kPlotLeft + kPlotRight) / 2),
                       px(plot_bottom + 36), escape(p.x_label));
    const double ymid = (plot_top + plot_bottom) / 2;
    out += fmt::format("<text x=\"{0}\" y=\"{1}\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 {0} {1})\">{2}</text>\n",
                       px(kPlotLeft - 55), px(ymid), escape(p.y_label));
    // Reference lines, dashed, labelled at their top or right end.
    for (const RefLine& r : p.refs) {
        if (r.vertical) {
            const double at = x.map(r.at);
            out += fmt::format("<line class=\"ref\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#555555\" stroke-dasharray=\"6 4\"/>\n",
                               px(at), px(plot_top), px(plot_bottom));
            // Labelled on the side with more room, so that a line at the right edge keeps its label inside the frame.
            const bool left = at > (kPlotLeft + kPlotRight) / 2;
            out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#555555\" text-anchor=\"{}\">{}</text>\n", px(left ? at - 3 : at + 3),
                               px(plot_top + 12 + 13 * r.label_row), left ? "end" : "start", escape(r.label));
        } else {
            const double at = y.map(r.at);
            out += fmt::format("<line class=\"ref\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#555555\" stroke-dasharray=\"6 4\"/>\n",
                               px(kPlotLeft), px(at), px(kPlotRight));
            out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"#555555\" text-anchor=\"end\">{}</text>\n", px(kPlotRight - 3),
                               px(at - 3), escape(r.label));
        }
    }
    // Series, then their legend entries.
    // A series with a colour of its own takes none from the palette: the others keep its order.
    std::size_t next_colour = first_colour;
    for (std::size_t i = 0; i < p.series.size(); ++i) {
        const ChartSeries& s = p.series[i];
        const std::string colour = s.colour.empty() ? kColours[next_colour++ % kColours.size()] : s.colour;
        out += s.markers ? scatter(s, x, y, colour) : polyline(s, x, y, colour);
        const double ly = plot_top + 10 + 18 * static_cast<double>(i);
        if (s.markers) out += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\"/>\n", px(kPlotRight + 27), px(ly), colour);
        else
            out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"3\"{4}/>\n", px(kPlotRight + 15),
                               px(ly), px(kPlotRight + 40), colour, s.dashed ? " stroke-dasharray=\"6 4\"" : "");
        out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\">{}</text>\n", px(kPlotRight + 46), px(ly + 4), escape(s.name));
    }
    out += "</g>\n";
    return out;
}

}  // namespace

std::vector<double> linear_ticks(double lo, double hi, int target) {
    if (!(hi > lo)) {  // one value: a unit range around it
        if (lo == 0) hi = 1;
        else {
            const double half = std::abs(lo) / 2;
            hi = lo + half;
            lo -= half;
        }
    }
    const double raw = (hi - lo) / std::max(target, 1);
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double norm = raw / mag;
    const double step = (norm <= 1 + 1e-9 ? 1 : norm <= 2 + 1e-9 ? 2 : norm <= 5 + 1e-9 ? 5 : 10) * mag;
    const auto k0 = static_cast<long long>(std::floor(lo / step + 1e-9));
    const auto k1 = static_cast<long long>(std::ceil(hi / step - 1e-9));
    std::vector<double> out;
    for (long long k = k0; k <= k1; ++k) out.push_back(static_cast<double>(k) * step);
    return out;
}

std::vector<double> log_ticks(double lo, double hi) {
    const int e0 = static_cast<int>(std::floor(std::log10(lo))), e1 = static_cast<int>(std::ceil(std::log10(hi)));
    const bool thin = e1 - e0 > 3;
    std::vector<double> out;
    for (int e = e0; e <= e1; ++e)
        for (double m : {1.0, 2.0, 5.0}) {
            if (thin && m != 1.0) continue;
            const double v = m * std::pow(10.0, e);
            if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
        }
    return out;
}

std::string tick_label(double value, double step) {
    step = std::abs(step);
    const int decimals = step >= 1 || step == 0 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
    if (std::abs(value) < step * 1e-6) value = 0;  // no "-0.00"
    return fmt::format("{:.{}f}", value, decimals);
}

std::string render_svg(const Chart& chart) {
    const double height = kTitleHeight + kPanelHeight * static_cast<double>(chart.panels.size()) + 10;
    std::string out = fmt::format(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\">\n"
        "<rect width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
        "<text x=\"{2}\" y=\"26\" font-size=\"16\" font-weight=\"bold\">{3}</text>\n",
        fmt::format("{:.0f}", kSvgWidth), fmt::format("{:.0f}", height), px(kPlotLeft - 60), escape(chart.title));
    std::size_t colour = 0;
    for (std::size_t i = 0; i < chart.panels.size(); ++i) {
        out += render_panel(chart.panels[i], kTitleHeight + kPanelHeight * static_cast<double>(i), colour);
        colour += chart.panels[i].series.size();
    }
    out += "</svg>\n";
    return out;
}

}  // namespace kvplan
