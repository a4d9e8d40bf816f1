// `--plot DIR` of `simulate` and `roofline` end to end (in process): each SVG
// is well-formed XML, the points it draws are the rows of the CSV beside it
// (read back through the panel's axis transform), a rerun writes the same
// bytes, long runs are thinned to at most 2,000 points and say so, a path
// that is not a folder is refused, and rsvg-convert renders each chart to a
// PNG of the chart's size that is not blank.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "io/svg_chart.hpp"
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

const std::vector<std::string> kSimulate = {"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", "azure-2023-conv",
                                            "--limit", "400", "--slo", "ttft=2s,tpot=50ms,e2e=30s"};

std::vector<std::string> with_plot(std::vector<std::string> args, const std::string& dir) {
    args.push_back("--plot");
    args.push_back(dir);
    return args;
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
    const std::string dir = temp_dir();
    REQUIRE(kvplan_run(with_plot(kSimulate, dir)).code == 0);
    REQUIRE(kvplan_run({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--plot", dir}).code == 0);
    // A PNG's IHDR chunk holds the width and height, big-endian, at bytes 16 and 20 (PNG spec, 11.2.2).
    auto be32 = [](const std::string& s, std::size_t at) {
        return (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at])) << 24) | (static_cast<unsigned char>(s[at + 1]) << 16) |
               (static_cast<unsigned char>(s[at + 2]) << 8) | static_cast<unsigned char>(s[at + 3]);
    };
    for (const char* name : {"latency_cdf", "timeseries", "step_time"}) {
        INFO(name);
        const fs::path svg = fs::path(dir) / (std::string(name) + ".svg");
        const std::string text = slurp(svg);
        const std::string width = svg_attr(text.substr(text.find("<svg"), 200), "width");
        const std::string height = svg_attr(text.substr(text.find("<svg"), 200), "height");
        // The control: an all-white image of the same size, which compresses to almost nothing.
        const fs::path blank = fs::path(dir) / (std::string(name) + "-blank.svg");
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
    for (const char* f : {"latency_cdf.svg", "timeseries.svg", "step_time.svg"}) {
        INFO(f);
        CHECK(slurp(fs::path(dir) / f) == slurp(fs::path(KVPLAN_SOURCE_DIR) / "docs" / "img" / f));
    }
}
