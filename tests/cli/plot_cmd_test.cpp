// `--plot DIR` of `simulate`, `roofline` and `recommend --slo`, and their
// `--report FILE.html`, end to end (in process): each SVG is well-formed XML,
// the points it draws are the rows of the CSV beside it (read back through
// the panel's axis transform), the reference lines stand where the CSV puts
// them, a rerun writes the same bytes, long runs are thinned to at most
// 2,000 points and say so, a path that is not a folder (or a report that
// cannot be written) is refused, the report holds the escaped text and the
// charts, and rsvg-convert renders each chart to a PNG of the chart's size
// that is not blank.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "report/svg_chart.hpp"
#include "svg_read.hpp"
#include "test_support.hpp"
#include "xml_check.hpp"

using namespace kvplan;
using namespace kvplan::test;
namespace fs = std::filesystem;

namespace {

std::string temp_dir() {
    std::string templ = (fs::temp_directory_path() / "kvplan-plot-XXXXXX").string();
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    return templ;
}

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

struct Csv {
    std::vector<std::string> comments;
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;
};

std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> out;
    std::istringstream s(line);
    for (std::string f; std::getline(s, f, ',');) out.push_back(f);
    return out;
}

Csv read_csv(const fs::path& p) {
    Csv c;
    std::istringstream in(slurp(p));
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("#", 0) == 0) c.comments.push_back(line);
        else if (c.header.empty()) c.header = split(line);
        else c.rows.push_back(split(line));
    }
    return c;
}

// The series `name` of `panel` is the CSV's (x_col, y_col) over `rows`.
void check_series(const SvgPanel& panel, const std::string& name, const std::vector<std::vector<std::string>>& rows, std::size_t x_col,
                  std::size_t y_col) {
    INFO("series " << name);
    REQUIRE(panel.series.count(name) == 1);
    const auto& pts = panel.series.at(name);
    REQUIRE(pts.size() == rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const double x = std::stod(rows[i][x_col]), y = std::stod(rows[i][y_col]);
        INFO("row " << i);
        CHECK(std::abs(pts[i].first - x) <= svg_x_tolerance(panel, x));
        CHECK(std::abs(pts[i].second - y) <= svg_y_tolerance(panel));
    }
}

std::vector<std::vector<std::string>> rows_of(const Csv& c, const std::string& metric) {
    std::vector<std::vector<std::string>> out;
    for (const auto& r : c.rows)
        if (r[0] == metric) out.push_back(r);
    return out;
}

const std::vector<std::string> kSimulate = {
    "simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", "azure-2023-conv", "--limit", "400", "--slo", "ttft=2s,tpot=50ms,e2e=30s"};

std::vector<std::string> with_plot(std::vector<std::string> args, const std::string& dir) {
    args.push_back("--plot");
    args.push_back(dir);
    return args;
}

std::vector<std::string> with_report(std::vector<std::string> args, const std::string& file) {
    args.push_back("--report");
    args.push_back(file);
    return args;
}

const std::vector<std::string> kRoofline = {"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"};

// Small enough to run in a second or two: 300 requests per run, two devices.
const std::vector<std::string> kRecommend = {
    "recommend", "--draws", "0", "--model",          "llama-3.1-8b",         "--slo", "ttft=2s,tpot=50ms", "--rate", "10", "--gpus", "h100-sxm,l40s", "--requests",
    "300",       "--price-per-hour", "h100-sxm=2.5,l40s=1.0"};

// A rate as the recommend table prints it.
std::string fmt_rate(double rps) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", rps);
    return buf;
}

// The rows of `c` whose column `col` is `value`.
std::vector<std::vector<std::string>> rows_where(const Csv& c, std::size_t col, const std::string& value) {
    std::vector<std::vector<std::string>> out;
    for (const auto& r : c.rows)
        if (r[col] == value) out.push_back(r);
    return out;
}

// The five characters the report escapes (io/html_report.cpp).
std::string html_escaped(const std::string& s) {
    std::string out;
    for (char ch : s) {
        if (ch == '&') out += "&amp;";
        else if (ch == '<') out += "&lt;";
        else if (ch == '>') out += "&gt;";
        else if (ch == '"') out += "&quot;";
        else if (ch == '\'') out += "&#39;";
        else out += ch;
    }
    return out;
}

// Self-contained: no scripts, nothing fetched (the only URL is the SVG namespace).
void check_report(const std::string& html, const std::string& title, const std::string& text, const std::vector<fs::path>& svgs) {
    CHECK_THAT(html, Catch::StartsWith("<!DOCTYPE html>\n<html lang=\"en\">"));
    CHECK_THAT(html, Catch::EndsWith("</body>\n</html>\n"));
    CHECK_THAT(html, Catch::Contains("<title>" + title + "</title>"));
    CHECK_THAT(html, Catch::Contains("<h1>" + title + "</h1>"));
    CHECK_THAT(html, Catch::Contains("<pre>" + html_escaped(text) + "</pre>"));
    for (const char* bad : {"<script", "src=", "href=", "@import", "url(", "<?xml"}) CHECK(html.find(bad) == std::string::npos);
    std::size_t urls = 0;
    for (std::size_t at = 0; (at = html.find("http", at)) != std::string::npos; ++at) ++urls;
    CHECK(urls == svgs.size());  // xmlns="http://www.w3.org/2000/svg", once per chart
    for (const fs::path& svg : svgs) {
        INFO(svg);
        const std::string text_svg = slurp(svg);
        CHECK_THAT(html, Catch::Contains(text_svg.substr(text_svg.find("<svg"))));
    }
}

}  // namespace

TEST_CASE("simulate --plot draws the latency CDFs and the series its CSVs hold") {
    const std::string dir = temp_dir() + "/made/by/plot";  // created when missing
    const CliResult plain = kvplan_run(kSimulate);
    const CliResult r = kvplan_run(with_plot(kSimulate, dir));
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out == plain.out);  // the printed report does not change
    for (const char* f : {"latency_cdf.svg", "latency_cdf.csv", "timeseries.svg", "timeseries.csv"}) CHECK(fs::is_regular_file(fs::path(dir) / f));

    const std::string cdf_svg = slurp(fs::path(dir) / "latency_cdf.svg");
    CHECK(xml_problem(cdf_svg) == "");
    CHECK(cdf_svg.find("llama-3.1-8b on NVIDIA H100 SXM 80GB, vLLM") != std::string::npos);
    CHECK(cdf_svg.find("H100") != std::string::npos);
    CHECK(cdf_svg.find("vLLM") != std::string::npos);
    const std::vector<SvgPanel> cdf = read_svg_panels(cdf_svg);
    REQUIRE(cdf.size() == 3);
    const Csv cdf_csv = read_csv(fs::path(dir) / "latency_cdf.csv");
    CHECK(cdf_csv.header == std::vector<std::string>{"metric", "value_s", "cumulative_fraction"});
    // 400 requests, fewer than 2,000: every value is drawn, the last at fraction 1.
    const auto ttft = rows_of(cdf_csv, "ttft");
    REQUIRE(ttft.size() == 400);
    CHECK(ttft.back()[2] == "1.000000");
    CHECK(ttft.front()[2] == "0.002500");  // 1 / 400
    check_series(cdf[0], "TTFT", ttft, 1, 2);
    check_series(cdf[1], "TPOT", rows_of(cdf_csv, "tpot"), 1, 2);
    check_series(cdf[2], "E2E", rows_of(cdf_csv, "e2e"), 1, 2);
    // Each --slo threshold is one vertical line in its panel.
    for (const SvgPanel& p : cdf) CHECK(p.ref_lines == 1);
    CHECK(cdf_svg.find("SLO 0.05 s") != std::string::npos);

    const std::string ts_svg = slurp(fs::path(dir) / "timeseries.svg");
    CHECK(xml_problem(ts_svg) == "");
    const std::vector<SvgPanel> ts = read_svg_panels(ts_svg);
    REQUIRE(ts.size() == 2);
    // Shares stop at 100%: the KV usage panel (with its "pool full" line at 1) and each CDF end at 1.
    CHECK(ts[0].y1 == Approx(1.0));
    for (const SvgPanel& p : cdf) CHECK(p.y1 == Approx(1.0));
    const Csv ts_csv = read_csv(fs::path(dir) / "timeseries.csv");
    // Not thinned: the rows are those --timeseries-csv writes.
    const fs::path full = fs::path(dir) / "full.csv";
    std::vector<std::string> args = kSimulate;
    args.insert(args.end(), {"--timeseries-csv", full.string()});
    REQUIRE(kvplan_run(args).code == 0);
    const Csv full_csv = read_csv(full);
    CHECK(ts_csv.header == full_csv.header);
    CHECK(ts_csv.rows == full_csv.rows);
    check_series(ts[0], "KV-cache usage", ts_csv.rows, 0, 3);
    check_series(ts[1], "running", ts_csv.rows, 0, 1);
    check_series(ts[1], "waiting", ts_csv.rows, 0, 2);
}

TEST_CASE("simulate --plot writes the same bytes on a rerun") {
    const std::string a = temp_dir(), b = temp_dir();
    REQUIRE(kvplan_run(with_plot(kSimulate, a)).code == 0);
    REQUIRE(kvplan_run(with_plot(kSimulate, b)).code == 0);
    for (const char* f : {"latency_cdf.svg", "latency_cdf.csv", "timeseries.svg", "timeseries.csv"}) {
        INFO(f);
        CHECK(slurp(fs::path(a) / f) == slurp(fs::path(b) / f));
    }
}

TEST_CASE("simulate --plot thins an hour-long trace to 2,000 points and says so") {
    // The whole Azure conversation trace: 19,366 requests over about an hour,
    // so more than 2,000 per-second samples and request latencies.
    const std::string dir = temp_dir();
    const CliResult r = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", "azure-2023-conv", "--plot", dir});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const Csv ts = read_csv(fs::path(dir) / "timeseries.csv");
    REQUIRE(ts.rows.size() == 2000);
    REQUIRE(ts.comments.size() == 1);
    CHECK_THAT(ts.comments[0], Catch::StartsWith("# 2000 of ") && Catch::Contains("per-second samples, evenly spaced"));
    const std::vector<SvgPanel> panels = read_svg_panels(slurp(fs::path(dir) / "timeseries.svg"));
    REQUIRE(panels.size() == 2);
    check_series(panels[1], "running", ts.rows, 0, 1);
    const Csv cdf = read_csv(fs::path(dir) / "latency_cdf.csv");
    CHECK_THAT(cdf.comments.at(0), Catch::Contains("ttft: 2000 of 19,366 values"));
    const auto e2e = rows_of(cdf, "e2e");
    REQUIRE(e2e.size() == 2000);
    CHECK(e2e.back()[2] == "1.000000");   // the largest value is kept
    CHECK(e2e.front()[2] == "0.000052");  // and the smallest: 1 / 19,366
}

TEST_CASE("roofline --plot draws the step time and its terms against batch") {
    const std::string dir = temp_dir();
    const std::vector<std::string> args = {"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"};
    std::vector<std::string> plotted = args;
    plotted.insert(plotted.end(), {"--plot", dir});
    const CliResult plain = kvplan_run(args);
    const CliResult r = kvplan_run(plotted);
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out == plain.out);
    const std::string svg = slurp(fs::path(dir) / "step_time.svg");
    CHECK(xml_problem(svg) == "");
    const std::vector<SvgPanel> panels = read_svg_panels(svg);
    REQUIRE(panels.size() == 1);
    CHECK(panels[0].log_x);  // batches 1 ... 512
    const Csv csv = read_csv(fs::path(dir) / "step_time.csv");
    REQUIRE(csv.rows.size() == 10);  // the default batches 1, 2, 4 ... 512
    CHECK(csv.rows[9][0] == "512");
    check_series(panels[0], "step", csv.rows, 0, 2);
    check_series(panels[0], "weights", csv.rows, 0, 3);
    check_series(panels[0], "KV cache", csv.rows, 0, 4);
    check_series(panels[0], "compute", csv.rows, 0, 5);
    check_series(panels[0], "overhead", csv.rows, 0, 6);
    // The step is max(weights + KV, compute) + overhead (+ all-reduce, 0 at TP 1):
    // core/speed/step_cost.cpp, finish. Rounded to 0.0001 ms per term.
    for (const auto& row : csv.rows) {
        const double mem = std::stod(row[3]) + std::stod(row[4]);
        CHECK(std::stod(row[2]) == Approx(std::max(mem, std::stod(row[5])) + std::stod(row[6])).margin(3e-4));
    }
    const std::string again = temp_dir();
    plotted.back() = again;
    REQUIRE(kvplan_run(plotted).code == 0);
    CHECK(slurp(fs::path(again) / "step_time.svg") == svg);
}

TEST_CASE("a plot folder that is a file is refused before any work") {
    const std::string file = temp_dir() + "/report.txt";
    std::ofstream(file) << "keep me\n";
    for (std::vector<std::string> args : {kSimulate, std::vector<std::string>{"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"}}) {
        const CliResult r = kvplan_run(with_plot(args, file));
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Catch::Contains("--plot: " + file + " exists and is not a folder"));
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
    CHECK(slurp(file) == "keep me\n");
}

TEST_CASE("rsvg-convert renders each chart to a PNG of its size that is not blank") {
    if (std::system("command -v rsvg-convert >/dev/null 2>&1") != 0) {
        WARN("rsvg-convert not found (Debian package librsvg2-bin, which `make test` installs): PNG rendering not checked");
        return;
    }
    const std::string dir = temp_dir(), rec = temp_dir();
    REQUIRE(kvplan_run(with_plot(kSimulate, dir)).code == 0);
    REQUIRE(kvplan_run({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--plot", dir}).code == 0);
    REQUIRE(kvplan_run(with_plot(kRecommend, rec)).code == 0);
    // A PNG's IHDR chunk holds the width and height, big-endian, at bytes 16 and 20 (PNG spec, 11.2.2).
    auto be32 = [](const std::string& s, std::size_t at) {
        return (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at])) << 24) | (static_cast<unsigned char>(s[at + 1]) << 16) |
               (static_cast<unsigned char>(s[at + 2]) << 8) | static_cast<unsigned char>(s[at + 3]);
    };
    const std::vector<std::pair<std::string, std::string>> charts = {{dir, "latency_cdf"}, {dir, "timeseries"}, {dir, "step_time"},
                                                                     {dir, "pareto"},      {rec, "goodput"},    {rec, "pareto"}};
    for (const auto& [folder, name] : charts) {
        INFO(folder << "/" << name);
        const fs::path svg = fs::path(folder) / (name + ".svg");
        const std::string text = slurp(svg);
        const std::string width = svg_attr(text.substr(text.find("<svg"), 200), "width");
        const std::string height = svg_attr(text.substr(text.find("<svg"), 200), "height");
        // The control: an all-white image of the same size, which compresses to almost nothing.
        const fs::path blank = fs::path(folder) / (name + "-blank.svg");
        std::ofstream(blank) << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height << "\"><rect width=\""
                             << width << "\" height=\"" << height << "\" fill=\"#ffffff\"/></svg>\n";
        for (const fs::path& in : {svg, blank}) {
            const std::string cmd = "rsvg-convert -f png -o '" + in.string() + ".png' '" + in.string() + "'";
            REQUIRE(std::system(cmd.c_str()) == 0);
        }
        const std::string png = slurp(svg.string() + ".png"), white = slurp(blank.string() + ".png");
        REQUIRE(png.size() > 24);
        CHECK(png.substr(0, 8) == "\x89PNG\r\n\x1a\n");
        CHECK(png.substr(12, 4) == "IHDR");
        CHECK(be32(png, 16) == static_cast<std::uint32_t>(std::stoul(width)));
        CHECK(be32(png, 20) == static_cast<std::uint32_t>(std::stoul(height)));
        // Lines, text and series make an image many times larger than the blank one.
        INFO("chart " << png.size() << " bytes, blank " << white.size() << " bytes");
        CHECK(png.size() > 8 * white.size());
    }
}

TEST_CASE("the charts in docs/img are what the commands docs/simulate.md and docs/roofline.md name write") {
    // After a change that moves them: the two commands in those docs, with --plot docs/img (the CSVs are not kept).
    const std::string dir = temp_dir();
    REQUIRE(kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", "azure-2023-conv", "--limit", "2000", "--slo",
                        "ttft=2s,tpot=50ms", "--plot", dir})
                .code == 0);
    REQUIRE(kvplan_run({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--plot", dir}).code == 0);
    for (const char* f : {"latency_cdf.svg", "timeseries.svg", "step_time.svg", "pareto.svg"}) {
        INFO(f);
        CHECK(slurp(fs::path(dir) / f) == slurp(fs::path(KVPLAN_SOURCE_DIR) / "docs" / "img" / f));
    }
}

TEST_CASE("the charts in docs/img/recommend are what the worked example of docs/recommend.md writes") {
    // After a change that moves them: that command with --plot docs/img/recommend (the CSVs are not kept).
    const std::string dir = temp_dir();
    REQUIRE(kvplan_run({"recommend", "--model", "llama-3.1-8b", "--slo", "ttft=2s,tpot=50ms", "--trace", "azure-2023-conv", "--gpus",
                        "h100-sxm,a100-sxm-80gb,l40s,l4", "--price-per-hour", "h100-sxm=2.5,a100-sxm-80gb=1.6,l40s=1.0,l4=0.5", "--plot", dir})
                .code == 0);
    for (const char* f : {"goodput.svg", "pareto.svg"}) {
        INFO(f);
        CHECK(slurp(fs::path(dir) / f) == slurp(fs::path(KVPLAN_SOURCE_DIR) / "docs" / "img" / "recommend" / f));
    }
}

TEST_CASE("roofline --plot draws each batch as tokens/s per GPU against tokens/s per user, the front joined") {
    const std::string dir = temp_dir();
    REQUIRE(kvplan_run(with_plot(kRoofline, dir)).code == 0);
    const std::string svg = slurp(fs::path(dir) / "pareto.svg");
    CHECK(xml_problem(svg) == "");
    CHECK_THAT(svg, Catch::Contains("llama-3.1-8b on NVIDIA H100 SXM 80GB, TP 1"));
    const std::vector<SvgPanel> panels = read_svg_panels(svg);
    REQUIRE(panels.size() == 1);
    const Csv csv = read_csv(fs::path(dir) / "pareto.csv");
    CHECK(csv.header == std::vector<std::string>{"batch", "step_ms", "tokens_per_s_per_user", "tokens_per_s_per_gpu", "fits", "on_front"});
    REQUIRE(csv.rows.size() == 10);
    const Csv steps = read_csv(fs::path(dir) / "step_time.csv");
    for (std::size_t i = 0; i < csv.rows.size(); ++i) {
        INFO("batch " << csv.rows[i][0]);
        // Per user: one token per step; per GPU at TP 1: batch tokens per step.
        CHECK(csv.rows[i][1] == steps.rows[i][2]);
        const double step_s = std::stod(csv.rows[i][1]) / 1e3;
        CHECK(std::stod(csv.rows[i][2]) == Approx(1 / step_s).epsilon(1e-4));
        CHECK(std::stod(csv.rows[i][3]) == Approx(std::stod(csv.rows[i][0]) / step_s).epsilon(1e-4));
    }
    check_series(panels[0], "fits in memory", rows_where(csv, 4, "1"), 2, 3);
    if (!rows_where(csv, 4, "0").empty()) check_series(panels[0], "exceeds memory", rows_where(csv, 4, "0"), 2, 3);
    // The step grows more slowly than the batch, so every batch that fits is on the front, by x ascending (batch descending).
    auto front = rows_where(csv, 5, "1");
    CHECK(front.size() == rows_where(csv, 4, "1").size());
    std::reverse(front.begin(), front.end());
    check_series(panels[0], "Pareto front", front, 2, 3);
}

TEST_CASE("recommend --slo --plot draws throughput and goodput against offered rate with the knee and the chosen rate where the CSV puts them") {
    const std::string dir = temp_dir() + "/charts";
    const CliResult plain = kvplan_run(kRecommend);
    const CliResult r = kvplan_run(with_plot(kRecommend, dir));
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out == plain.out);  // the printed report does not change
    const std::string svg = slurp(fs::path(dir) / "goodput.svg");
    CHECK(xml_problem(svg) == "");
    CHECK_THAT(svg, Catch::Contains("Throughput and goodput against offered rate: llama-3.1-8b, vLLM"));
    const Csv csv = read_csv(fs::path(dir) / "goodput.csv");
    CHECK(csv.header ==
          std::vector<std::string>{"rank", "candidate", "multiple", "offered_rps", "throughput_rps", "goodput_rps", "goodput_share", "knee"});
    const std::vector<SvgPanel> panels = read_svg_panels(svg);
    REQUIRE(panels.size() == 3);  // the best three
    REQUIRE(csv.rows.size() == 3 * 15);
    for (std::size_t k = 0; k < panels.size(); ++k) {
        INFO("candidate " << k + 1);
        const auto rows = rows_where(csv, 0, std::to_string(k + 1));
        REQUIRE(rows.size() == 15);
        check_series(panels[k], "throughput", rows, 3, 4);
        check_series(panels[k], "goodput", rows, 3, 5);
        check_series(panels[k], "offered (y = x)", rows, 3, 3);
        // The chosen rate is multiple 1; the knee the highest offered rate whose share is at least 99%.
        double chosen = 0, knee = 0;
        std::size_t knees = 0;
        for (const auto& row : rows) {
            if (row[2] == "1.000") chosen = std::stod(row[3]);
            if (std::stod(row[6]) >= 0.99) knee = std::max(knee, std::stod(row[3]));
            knees += row[7] == "1";
        }
        REQUIRE(knees == 1);
        CHECK(std::stod(rows_where(Csv{{}, {}, rows}, 7, "1").at(0)[3]) == knee);
        CHECK(knee >= chosen);  // the search's rate passed
        REQUIRE(panels[k].ref_x.size() == 2);
        CHECK(std::abs(panels[k].ref_x[0] - chosen) <= svg_x_tolerance(panels[k], chosen));
        CHECK(std::abs(panels[k].ref_x[1] - knee) <= svg_x_tolerance(panels[k], knee));
        // The search's own rate per replica, as the table prints it.
        CHECK_THAT(r.out, Catch::Contains(fmt_rate(chosen)));
    }
}

TEST_CASE("recommend --slo --plot draws every qualifying candidate as tokens/s per GPU against tokens/s per user, the front joined") {
    const std::string dir = temp_dir();
    REQUIRE(kvplan_run(with_plot(kRecommend, dir)).code == 0);
    const std::string svg = slurp(fs::path(dir) / "pareto.svg");
    CHECK(xml_problem(svg) == "");
    const std::vector<SvgPanel> panels = read_svg_panels(svg);
    REQUIRE(panels.size() == 1);
    const Csv csv = read_csv(fs::path(dir) / "pareto.csv");
    CHECK(csv.header == std::vector<std::string>{"rank", "candidate", "gpus", "rate_rps", "tpot_p50_ms", "tokens_per_s_per_user",
                                                 "output_tokens_per_s_per_gpu", "on_front"});
    REQUIRE(csv.rows.size() >= 3);
    // Every point is drawn once, in its GPU x TP colour.
    std::size_t drawn = 0;
    for (const auto& [name, pts] : panels[0].series)
        if (name != "Pareto front") drawn += pts.size();
    CHECK(drawn == csv.rows.size());
    for (const auto& row : csv.rows) {
        INFO(row[1]);
        const std::string group = row[1].substr(0, row[1].rfind(' '));  // "h100-sxm TP 1 default" -> "h100-sxm TP 1"
        REQUIRE(panels[0].series.count(group) == 1);
        CHECK(std::stod(row[5]) == Approx(1e3 / std::stod(row[4])).epsilon(2e-3));
        // On the front exactly when no other point is at least as good on both axes and better on one.
        const double x = std::stod(row[5]), y = std::stod(row[6]);
        bool dominated = false;
        for (const auto& other : csv.rows) {
            const double ox = std::stod(other[5]), oy = std::stod(other[6]);
            dominated = dominated || (ox >= x && oy >= y && (ox > x || oy > y));
        }
        if (dominated) CHECK(row[7] == "0");
    }
    auto front = rows_where(csv, 7, "1");
    REQUIRE(!front.empty());
    std::sort(front.begin(), front.end(), [](const auto& a, const auto& b) { return std::stod(a[5]) < std::stod(b[5]); });
    check_series(panels[0], "Pareto front", front, 5, 6);
}

TEST_CASE("simulate --plot titles name the replicas, as the summary does") {
    const std::string dir = temp_dir();
    std::vector<std::string> args = kSimulate;
    args.insert(args.end(), {"--replicas", "4"});
    REQUIRE(kvplan_run(with_plot(args, dir)).code == 0);
    for (const char* f : {"latency_cdf.svg", "timeseries.svg"})
        CHECK_THAT(slurp(fs::path(dir) / f), Catch::Contains("llama-3.1-8b on 4 replicas of NVIDIA H100 SXM 80GB, vLLM"));
}

TEST_CASE("recommend --slo --plot labels DP attention + EP candidates with their layout, not TP 1") {
    // recommend --help's SGLang example: deepseek-v3 on up to 2 nodes of H200 is searched as TP 8 and as
    // DP 8 and DP 16 attention with EP (TP 1 a rank), which the table calls "DP 8 + EP 8".
    const std::string dir = temp_dir();
    REQUIRE(kvplan_run(with_plot({"recommend", "--draws", "0", "--model", "deepseek-v3", "--engine", "sglang", "--slo", "ttft=2s,tpot=100ms", "--rate", "40",
                                  "--input-len", "fixed:2000", "--output-len", "fixed:500", "--gpus", "h200", "--max-nodes", "2"},
                                 dir))
                .code == 0);
    const Csv csv = read_csv(fs::path(dir) / "pareto.csv");
    std::size_t dp_rows = 0;
    for (const auto& row : csv.rows) {
        INFO(row[1]);
        CHECK(row[1].find("TP 1") == std::string::npos);
        // A DP + EP candidate's GPUs are its DP ranks: "h200 DP 8 + EP 8 default" on 8 GPUs.
        if (row[1].find(" DP ") != std::string::npos) {
            CHECK(row[1].rfind("h200 DP " + row[2] + " + EP " + row[2] + " ", 0) == 0);
            ++dp_rows;
        }
    }
    CHECK(dp_rows > 0);
    const std::string svg = slurp(fs::path(dir) / "pareto.svg");
    CHECK(xml_problem(svg) == "");
    CHECK_THAT(svg, Catch::Contains("data-series=\"h200 DP 8 + EP 8\"") && !Catch::Contains("h200 TP 1"));
}

TEST_CASE("recommend --slo --plot and --report write the same bytes on a rerun") {
    const std::string a = temp_dir(), b = temp_dir();
    REQUIRE(kvplan_run(with_report(with_plot(kRecommend, a), a + "/report.html")).code == 0);
    REQUIRE(kvplan_run(with_report(with_plot(kRecommend, b), b + "/report.html")).code == 0);
    for (const char* f : {"goodput.svg", "goodput.csv", "pareto.svg", "pareto.csv", "report.html"}) {
        INFO(f);
        CHECK(slurp(fs::path(a) / f) == slurp(fs::path(b) / f));
    }
}

TEST_CASE("the report of simulate, roofline and recommend is one self-contained HTML page with the escaped output and the charts inline") {
    const std::string dir = temp_dir();
    SECTION("simulate") {
        const CliResult r = kvplan_run(with_report(with_plot(kSimulate, dir), dir + "/sim.html"));
        REQUIRE(r.code == 0);
        CHECK(r.out == kvplan_run(kSimulate).out);
        check_report(slurp(fs::path(dir) / "sim.html"), "kvplan simulate: llama-3.1-8b on NVIDIA H100 SXM 80GB, vLLM", r.out,
                     {fs::path(dir) / "latency_cdf.svg", fs::path(dir) / "timeseries.svg"});
    }
    SECTION("roofline") {
        const std::vector<std::string> args = kRoofline;
        const CliResult r = kvplan_run(with_report(with_plot(args, dir), dir + "/roof.html"));
        REQUIRE(r.code == 0);
        check_report(slurp(fs::path(dir) / "roof.html"), "kvplan roofline: llama-3.1-8b on NVIDIA H100 SXM 80GB, TP 1", r.out,
                     {fs::path(dir) / "step_time.svg", fs::path(dir) / "pareto.svg"});
    }
    SECTION("recommend --slo") {
        const CliResult r = kvplan_run(with_report(with_plot(kRecommend, dir), dir + "/rec.html"));
        REQUIRE(r.code == 0);
        CHECK(r.out.find("TTFT <= 2000.0 ms") != std::string::npos);  // escaped in the page as "TTFT &lt;= 2000.0 ms"
        CHECK_THAT(slurp(fs::path(dir) / "rec.html"), Catch::Contains("TTFT &lt;= 2000.0 ms"));
        check_report(slurp(fs::path(dir) / "rec.html"), "kvplan recommend --slo: llama-3.1-8b on h100-sxm, l40s, vLLM", r.out,
                     {fs::path(dir) / "goodput.svg", fs::path(dir) / "pareto.svg"});
    }
}

TEST_CASE("a plot folder that is a file, or a report that cannot be written, is refused before any work") {
    const std::string dir = temp_dir();
    const std::string file = dir + "/report.txt";
    std::ofstream(file) << "keep me\n";
    const std::string nowhere = dir + "/missing/folder/report.html";
    for (const std::vector<std::string>& args : {kSimulate, kRoofline, kRecommend}) {
        INFO(args[0]);
        const CliResult bad_report = kvplan_run(with_report(args, nowhere));
        CHECK(bad_report.code == 2);
        CHECK(bad_report.out.empty());
        CHECK_THAT(bad_report.err, Catch::Contains("cannot write " + nowhere));
        CHECK(std::count(bad_report.err.begin(), bad_report.err.end(), '\n') == 1);
        const CliResult bad_plot = kvplan_run(with_plot(args, file));
        CHECK(bad_plot.code == 2);
        CHECK(bad_plot.out.empty());
        CHECK_THAT(bad_plot.err, Catch::Contains("--plot: " + file + " exists and is not a folder"));
    }
    CHECK(!fs::exists(dir + "/missing"));
    CHECK(slurp(file) == "keep me\n");
    // The analytic search draws no charts.
    const CliResult analytic =
        kvplan_run({"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "0.5", "--tpot", "0.05", "--plot", dir});
    CHECK(analytic.code == 2);
    CHECK_THAT(analytic.err, Catch::Contains("--plot: the charts are the SLO search's"));
}
