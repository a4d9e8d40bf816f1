#include "report/html_report.hpp"

#include <fmt/format.h>

#include "report/printable.hpp"
#include "report/svg_chart.hpp"

namespace kvplan {

namespace {

// The five characters HTML gives a meaning in text and attributes, and control
// characters (report/printable.hpp); the text output keeps its lines.
std::string escape_html(const std::string& s, bool keep_newlines = false) {
    return markup_text(s, true, keep_newlines);
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The <svg> element alone: an XML declaration is not allowed inside HTML.
std::string inline_svg(const std::string& svg) {
    const std::size_t at = svg.find("<svg");
    return at == std::string::npos ? svg : svg.substr(at);
}

std::string model_name(const std::string& label) {
    return label.substr(0, label.find(" ("));
}

std::string engine_name(const std::string& engine) {
    return engine == "sglang" ? "SGLang" : "vLLM";
}

}  // namespace

std::string render_html_report(const std::string& title, const std::string& text, const std::vector<PlotFile>& charts) {
    std::string out = fmt::format(
        "<!DOCTYPE html>\n"
        "<html lang=\"en\">\n"
        "<head>\n"
        "<meta charset=\"utf-8\">\n"
        "<title>{0}</title>\n"
        "<style>\n"
        "body {{ font-family: sans-serif; margin: 2em; color: #222222; }}\n"
        "pre {{ font-family: monospace; font-size: 13px; background: #f6f6f6; padding: 1em; overflow-x: auto; }}\n"
        "figure {{ margin: 1.5em 0; }}\n"
        "figcaption {{ font-size: 13px; color: #555555; }}\n"
        "</style>\n"
        "</head>\n"
        "<body>\n"
        "<h1>{0}</h1>\n"
        "<pre>{1}</pre>\n",
        escape_html(title), escape_html(text, true));
    for (const PlotFile& f : charts) {
        if (!ends_with(f.name, ".svg")) continue;
        out += "<figure>\n" + inline_svg(f.text) + fmt::format("<figcaption>{}</figcaption>\n</figure>\n", escape_html(f.name));
    }
    out += "</body>\n</html>\n";
    return out;
}

std::string simulate_report_title(const SimulateResult& r) {
    return fmt::format("kvplan simulate: {} on {}, {}", model_name(r.model_label), r.gpu_name, engine_name(r.engine));
}

std::string roofline_report_title(const RooflineResult& r) {
    return fmt::format("kvplan roofline: {} on {}, TP {}", model_name(r.model_label), r.gpu.name, r.cost.tp);
}

std::string recommend_report_title(const SloRecommendResult& r) {
    std::string gpus;
    for (const std::string& g : r.gpu_ids) gpus += (gpus.empty() ? "" : ", ") + g;
    return fmt::format("kvplan recommend --slo: {} on {}, {}", r.base.model, gpus, engine_name(r.engine));
}

}  // namespace kvplan
