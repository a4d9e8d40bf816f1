// io/svg_chart: round ticks (hand-derived 1-2-5 cases), well-formed XML, the
// points drawn equal the data given, step series hold their value, the same
// chart gives the same bytes, text is escaped, and a scatter draws one dot
// per point in its own colour.
#include "report/svg_chart.hpp"

#include <catch2/catch.hpp>

#include "svg_read.hpp"
#include "xml_check.hpp"

using namespace kvplan;
using namespace kvplan::test;

TEST_CASE("linear ticks step by 1, 2 or 5 times a power of ten") {
    // 0..37 in about 5 intervals: raw step 7.4 rounds up to 10 -> 0..40.
    CHECK(linear_ticks(0, 37) == std::vector<double>{0, 10, 20, 30, 40});
    // 0..1: raw step 0.2 is already round.
    const std::vector<double> unit = linear_ticks(0, 1);
    REQUIRE(unit.size() == 6);
    CHECK(unit[3] == Approx(0.6));
    CHECK(unit.back() == Approx(1.0));
    // 0.013..0.087: raw 0.0148 -> 0.02; from 0 (floor of 0.013/0.02) to 0.1 (ceil of 0.087/0.02 = 5).
    const std::vector<double> small = linear_ticks(0.013, 0.087);
    REQUIRE(small.size() == 6);
    CHECK(small.front() == 0);
    CHECK(small.back() == Approx(0.1));
    // 120..480: raw 72 -> 100; 100..500.
    CHECK(linear_ticks(120, 480) == std::vector<double>{100, 200, 300, 400, 500});
    // 0..3: raw 0.6 -> 1 (0.6 > 0.5).
    CHECK(linear_ticks(0, 3) == std::vector<double>{0, 1, 2, 3});
    // 0..8: raw 1.6 -> 2.
    CHECK(linear_ticks(0, 8) == std::vector<double>{0, 2, 4, 6, 8});
    // A single value 0 becomes 0..1; 4 becomes 2..6 (raw 0.8 -> 1).
    CHECK(linear_ticks(0, 0).back() == Approx(1.0));
    CHECK(linear_ticks(4, 4) == std::vector<double>{2, 3, 4, 5, 6});
}

TEST_CASE("log ticks are 1, 2 and 5 per decade, powers of ten past three decades") {
    CHECK(log_ticks(1, 512) == std::vector<double>{1, 2, 5, 10, 20, 50, 100, 200, 500});
    CHECK(log_ticks(1, 1e5) == std::vector<double>{1, 10, 100, 1000, 10000, 100000});
}

TEST_CASE("tick labels carry the decimals their step needs") {
    CHECK(tick_label(40, 10) == "40");
    CHECK(tick_label(0.6000000000000001, 0.2) == "0.6");
    CHECK(tick_label(0.05, 0.05) == "0.05");
    CHECK(tick_label(-1e-17, 0.2) == "0.0");  // no "-0.0"
    CHECK(tick_label(0.01, 0.01) == "0.01");
}

namespace {

Chart sample_chart() {
    Chart c;
    c.title = "Llama & friends <test>";
    ChartPanel a;
    a.title = "line";
    a.x_label = "time (s)";
    a.y_label = "value";
    a.series.push_back({"rising", {0, 1, 2, 3.5}, {0, 10, 25, 37}, false});
    a.refs.push_back({true, 2.5, "SLO 2.5 s"});
    a.refs.push_back({false, 30, "limit"});
    ChartPanel b;
    b.x_label = "batch";
    b.y_label = "step (ms)";
    b.log_x = true;
    b.series.push_back({"held", {1, 4, 16}, {3, 5, 4}, true});
    c.panels = {a, b};
    return c;
}

}  // namespace

TEST_CASE("an SVG chart is well-formed XML and its points are the data given") {
    const std::string svg = render_svg(sample_chart());
    CHECK(xml_problem(svg) == "");
    CHECK(svg.find("Llama &amp; friends &lt;test&gt;") != std::string::npos);
    CHECK(svg.find("<script") == std::string::npos);
    const std::vector<SvgPanel> panels = read_svg_panels(svg);
    REQUIRE(panels.size() == 2);
    // Panel 1: x 0..3.5 -> ticks 0..4 (raw 0.7 -> 1); y 0..37 -> 0..40.
    CHECK(panels[0].x1 == 4);
    CHECK(panels[0].y1 == 40);
    CHECK(panels[0].ref_lines == 2);
    const auto& rising = panels[0].series.at("rising");
    REQUIRE(rising.size() == 4);
    const std::vector<std::pair<double, double>> want = {{0, 0}, {1, 10}, {2, 25}, {3.5, 37}};
    for (std::size_t i = 0; i < want.size(); ++i) {
        CHECK(std::abs(rising[i].first - want[i].first) <= svg_x_tolerance(panels[0], want[i].first));
        CHECK(std::abs(rising[i].second - want[i].second) <= svg_y_tolerance(panels[0]));
    }
    // Panel 2, a step on a log axis: (1,3) (4,3) (4,5) (16,5) (16,4).
    const auto& held = panels[1].series.at("held");
    REQUIRE(held.size() == 5);
    const std::vector<std::pair<double, double>> steps = {{1, 3}, {4, 3}, {4, 5}, {16, 5}, {16, 4}};
    for (std::size_t i = 0; i < steps.size(); ++i) {
        CHECK(std::abs(held[i].first - steps[i].first) <= svg_x_tolerance(panels[1], steps[i].first));
        CHECK(std::abs(held[i].second - steps[i].second) <= svg_y_tolerance(panels[1]));
    }
}

TEST_CASE("the same chart renders to the same bytes") {
    CHECK(render_svg(sample_chart()) == render_svg(sample_chart()));
}

TEST_CASE("a reference line at the end of an axis gets one more tick, not the frame") {
    // y data 0..1 -> ticks 0, 0.2 ... 1; a line at y = 1 would lie on the top
    // edge, so the axis runs to 1.2. A line at 0.5 inside the range changes nothing.
    Chart c;
    ChartPanel p;
    p.series.push_back({"usage", {0, 10}, {0, 1}, false});
    p.refs.push_back({false, 1.0, "full"});
    c.panels = {p};
    CHECK(read_svg_panels(render_svg(c)).at(0).y1 == Approx(1.2));
    c.panels[0].refs[0].at = 0.5;
    CHECK(read_svg_panels(render_svg(c)).at(0).y1 == Approx(1.0));
}

TEST_CASE("a share's axis stops at its whole, even with a reference line there") {
    // The same panel as above with y_max = 1 (a share): the axis ends at 1, not 1.2, and its
    // last tick label is 1.0; without data past 1 nothing is cut.
    Chart c;
    ChartPanel p;
    p.series.push_back({"usage", {0, 10}, {0, 0.9}, false});
    p.refs.push_back({false, 1.0, "full"});
    p.y_max = 1;
    c.panels = {p};
    const std::string svg = render_svg(c);
    CHECK(read_svg_panels(svg).at(0).y1 == Approx(1.0));
    CHECK(svg.find(">1.2<") == std::string::npos);
    CHECK(svg.find(">1.0<") != std::string::npos);
    CHECK(xml_problem(svg) == "");
}

TEST_CASE("a scatter series is one dot per point, labelled, and a series with its own colour takes none from the palette") {
    Chart c;
    ChartPanel p;
    ChartSeries front{"front", {1, 2}, {4, 2}, false};
    front.colour = "#333333";
    ChartSeries dots{"dots", {1, 1.5, 2}, {4, 3, 2}, false};
    dots.markers = true;
    dots.labels = {"b=1", "", "b<2>"};
    p.series = {front, dots};
    p.refs.push_back({true, 1.5, "first", 0});
    p.refs.push_back({true, 1.5, "second", 1});
    c.panels = {p};
    const std::string svg = render_svg(c);
    CHECK(xml_problem(svg) == "");
    const std::vector<SvgPanel> panels = read_svg_panels(svg);
    REQUIRE(panels.size() == 1);
    const auto& pts = panels[0].series.at("dots");
    REQUIRE(pts.size() == 3);
    CHECK(std::abs(pts[1].first - 1.5) <= svg_x_tolerance(panels[0], 1.5));
    CHECK(std::abs(pts[1].second - 3) <= svg_y_tolerance(panels[0]));
    // Three dots and one legend dot, no polyline for the scatter.
    std::size_t circles = 0, polylines = 0;
    for (std::size_t at = 0; (at = svg.find("<circle", at)) != std::string::npos; ++at) ++circles;
    for (std::size_t at = 0; (at = svg.find("<polyline", at)) != std::string::npos; ++at) ++polylines;
    CHECK(circles == 4);
    CHECK(polylines == 1);
    // The scatter is the panel's first series without a colour: the palette's first, blue.
    CHECK(svg.find("fill=\"#1f77b4\" fill-opacity") != std::string::npos);
    CHECK(svg.find("stroke=\"#333333\"") != std::string::npos);
    CHECK(svg.find(">b=1</text>") != std::string::npos);
    CHECK(svg.find(">b&lt;2&gt;</text>") != std::string::npos);
    // Two lines at one x: the second label one row (13 px) below the first.
    CHECK(panels[0].ref_x.size() == 2);
    const std::size_t first = svg.find(">first</text>"), second = svg.find(">second</text>");
    REQUIRE(first != std::string::npos);
    REQUIRE(second != std::string::npos);
    const auto y_of = [&](std::size_t end) {
        const std::size_t tag = svg.rfind("<text", end);
        return std::stod(svg_attr(svg.substr(tag, end - tag), "y"));
    };
    CHECK(y_of(second) - y_of(first) == Approx(13));
}
