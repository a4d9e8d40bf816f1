// Reads back what io/svg_chart.cpp draws: each panel's axis transform (its
// data-* attributes) and each series' polyline points (a scatter's circles)
// mapped back to data, and the x of each reference line,
// so tests can compare a chart with the CSV written beside it.
#pragma once

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace kvplan::test {

struct SvgPanel {
    double x0 = 0, x1 = 1, px0 = 0, px1 = 1, y0 = 0, y1 = 1, py0 = 0, py1 = 1;
    bool log_x = false;
    std::map<std::string, std::vector<std::pair<double, double>>> series;  // data coordinates
    std::vector<std::string> order;                                        // series names as drawn
    int ref_lines = 0;
    std::vector<double> ref_x;  // vertical reference lines, in data x
};

inline std::string svg_attr(const std::string& tag, const std::string& name) {
    const std::string key = " " + name + "=\"";
    const std::size_t at = tag.find(key);
    if (at == std::string::npos) return "";
    const std::size_t from = at + key.size();
    return tag.substr(from, tag.find('"', from) - from);
}

inline std::vector<SvgPanel> read_svg_panels(const std::string& svg) {
    std::vector<SvgPanel> out;
    std::size_t pos = 0;
    while ((pos = svg.find("<g class=\"panel\"", pos)) != std::string::npos) {
        const std::size_t end = svg.find("</g>", pos);
        const std::string tag = svg.substr(pos, svg.find('>', pos) - pos);
        SvgPanel p;
        p.x0 = std::stod(svg_attr(tag, "data-x0"));
        p.x1 = std::stod(svg_attr(tag, "data-x1"));
        p.px0 = std::stod(svg_attr(tag, "data-px0"));
        p.px1 = std::stod(svg_attr(tag, "data-px1"));
        p.y0 = std::stod(svg_attr(tag, "data-y0"));
        p.y1 = std::stod(svg_attr(tag, "data-y1"));
        p.py0 = std::stod(svg_attr(tag, "data-py0"));
        p.py1 = std::stod(svg_attr(tag, "data-py1"));
        p.log_x = svg_attr(tag, "data-log-x") == "1";
        const std::string body = svg.substr(pos, end - pos);
        const auto data_x = [&p](double sx) {
            const double f = (sx - p.px0) / (p.px1 - p.px0);
            return p.log_x ? std::pow(10.0, std::log10(p.x0) + f * (std::log10(p.x1) - std::log10(p.x0))) : p.x0 + f * (p.x1 - p.x0);
        };
        const auto data_y = [&p](double sy) { return p.y0 + (sy - p.py0) / (p.py1 - p.py0) * (p.y1 - p.y0); };
        for (std::size_t r = 0; (r = body.find("<line class=\"ref\"", r)) != std::string::npos; ++r) {
            ++p.ref_lines;
            const std::string line = body.substr(r, body.find("/>", r) - r);
            if (svg_attr(line, "x1") == svg_attr(line, "x2")) p.ref_x.push_back(data_x(std::stod(svg_attr(line, "x1"))));
        }
        for (std::size_t q = 0; (q = body.find("<polyline", q)) != std::string::npos; ++q) {
            const std::string line = body.substr(q, body.find("/>", q) - q);
            const std::string name = svg_attr(line, "data-series");
            p.order.push_back(name);
            std::istringstream pts(svg_attr(line, "points"));
            std::string xy;
            while (pts >> xy) {
                const std::size_t comma = xy.find(',');
                p.series[name].emplace_back(data_x(std::stod(xy.substr(0, comma))), data_y(std::stod(xy.substr(comma + 1))));
            }
        }
        for (std::size_t q = 0; (q = body.find("<circle data-series=", q)) != std::string::npos; ++q) {
            const std::string dot = body.substr(q, body.find("/>", q) - q);
            const std::string name = svg_attr(dot, "data-series");
            if (!p.series.count(name)) p.order.push_back(name);
            p.series[name].emplace_back(data_x(std::stod(svg_attr(dot, "cx"))), data_y(std::stod(svg_attr(dot, "cy"))));
        }
        out.push_back(std::move(p));
        pos = end;
    }
    return out;
}

// Half a hundredth of a pixel (points are printed with 2 decimals), in data units.
inline double svg_x_tolerance(const SvgPanel& p, double x) {
    const double per_px = p.log_x ? x * std::log(10.0) * (std::log10(p.x1) - std::log10(p.x0)) / std::abs(p.px1 - p.px0)
                                  : std::abs(p.x1 - p.x0) / std::abs(p.px1 - p.px0);
    return 0.006 * per_px;
}
inline double svg_y_tolerance(const SvgPanel& p) {
    return 0.006 * std::abs(p.y1 - p.y0) / std::abs(p.py1 - p.py0);
}

}  // namespace kvplan::test
