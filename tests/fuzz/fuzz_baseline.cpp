// libFuzzer target: baseline files as `kvplan check` reads them. Bytes ->
// JSON -> Baseline (every field checked, each scenario's line found) -> up
// to eight scenarios computed against a small model (GPT-2, so that each
// execution is fast) -> compared -> the report in all five formats -> the
// text `check --update` would write. A kvplan::Error is the expected answer
// to bad input; anything else is a bug. Build and run: `make fuzz`.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/gate/baseline.hpp"
#include "core/gate/regression.hpp"
#include "core/gate/scenario.hpp"
#include "core/model/config_parser.hpp"
#include "io/baseline_file.hpp"
#include "io/engine_db.hpp"
#include "io/gpu_db.hpp"
#include "io/model_loader.hpp"
#include "io/presets.hpp"
#include "report/check_report.hpp"

using namespace kvplan;

namespace {

ScenarioCheck check_one(const Scenario& s, const ModelSpec& model, const Tolerances& tolerances, Figures& current) {
    ScenarioCheck c;
    c.name = s.name;
    c.line = s.line;
    try {
        const Gpu& gpu = find_gpu(bundled_gpus(), s.inputs.gpu);
        Efficiency efficiency;
        efficiency.profile.all_to_all = bundled_all_to_all_latencies();  // as `kvplan check` runs it
        efficiency.profile.nics = bundled_nics();                        // a layout over several nodes
        const ScenarioResult result = evaluate_scenario(model, gpu, s.inputs, efficiency);
        current = result.figures;
        c.figures = compare_scenario(s.inputs, s.expected, result.figures, tolerances);
    } catch (const Error& e) {
        c.error = e.what();
    }
    return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 256 * 1024) return -1;
    const std::string text(reinterpret_cast<const char*>(data), size);
    static const ModelSpec model = load_model("gpt2");
    Baseline baseline;
    nlohmann::ordered_json doc;
    try {
        const nlohmann::json parsed = parse_json_text(text, "fuzz.json");
        baseline = parse_baseline(parsed, "fuzz.json", true);
        doc = nlohmann::ordered_json::parse(text);
    } catch (const Error&) {
        return 0;
    }
    CheckReport report;
    report.baseline_path = "fuzz.json";
    report.tolerances = Tolerances{baseline.tolerance_ppb.value_or(5'000'000), baseline.tolerance_by_figure};
    std::vector<Figures> current;
    for (std::size_t i = 0; i < baseline.scenarios.size() && i < 8; ++i) {
        current.emplace_back();
        report.checks.push_back(check_one(baseline.scenarios[i], model, report.tolerances, current.back()));
    }
    report.summary = summarize(report.checks);
    report.exit_code = check_exit_code(report.summary, report.checks, false);
    for (const auto render : {render_check_text, render_check_json, render_check_junit, render_check_github, render_check_markdown})
        (void)render(report);
    nlohmann::ordered_json& list = doc["scenarios"];
    for (std::size_t i = 0; i < current.size(); ++i) set_expected(list[i], current[i]);
    (void)baseline_text(doc);
    return 0;
}
