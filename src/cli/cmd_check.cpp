#include "cli/cmd_check.hpp"

#include <map>

#include "cli/flag_checks.hpp"
#include "cli/version.hpp"
#include "core/error.hpp"
#include "core/gate/regression.hpp"
#include "core/gate/scenario.hpp"
#include "core/speed/calibration.hpp"
#include "io/baseline_file.hpp"
#include "io/engine_db.hpp"
#include "io/file_writer.hpp"
#include "io/gpu_db.hpp"
#include "io/model_loader.hpp"
#include "report/check_report.hpp"
#include "report/printable.hpp"

namespace kvplan {

CLI::App* setup_check(CLI::App& app, CheckOptions& o) {
    CLI::App* cmd = app.add_subcommand("check", "CI gate: recompute a baseline's scenarios and fail when capacity regressed");
    cmd->add_option("--baseline", o.baseline, "baseline JSON (schema: docs/ci.md; `kvplan baseline` writes one)")->required();
    cmd->add_option("--tolerance", o.tolerance,
                    "relative change allowed before a figure counts, e.g. 0.5%, or per figure: 0.5%,decode_step_s=2% (default: the "
                    "baseline's tolerance_percent, else 0%; the decode figures, being modelled, at least 5% unless named)");
    cmd->add_option("--format", o.format, "text|json|junit|github|markdown")->check(CLI::IsMember({"text", "json", "junit", "github", "markdown"}));
    cmd->add_option("-o,--output", o.output, "write the report to FILE (atomically) and print only the summary line");
    cmd->add_flag("--strict", o.strict, "improvements fail too (exit 1): the baseline is stale and should be updated");
    cmd->add_flag("--changes-only", o.changes_only, "text format: list only figures that changed (and scenarios that failed)");
    add_wide_flag(*cmd, o.wide);
    cmd->add_flag("--update", o.update, "rewrite the baseline's expected figures with the current ones (atomic; key order kept)");
    cmd->footer(
        "Exit codes: 0 passed, 1 regression (or improvement with --strict), 2 usage, 65 bad baseline or broken config.\n"
        "Examples:\n"
        "  kvplan baseline --model llama-3.1-8b --gpu h100-sxm --context 4096,32768 --output capacity.json\n"
        "  kvplan check --baseline capacity.json --tolerance 0.5%\n"
        "  kvplan check --baseline capacity.json --format github        # annotations in a GitHub Actions job\n"
        "  kvplan check --baseline capacity.json --format junit --output kvplan-check.xml\n"
        "  kvplan check --baseline capacity.json --update                # accept the new figures");
    return cmd;
}

namespace {

// Models by argument: many scenarios share one config.
class ModelCache {
public:
    const ModelSpec& get(const std::string& argument) {
        auto it = models_.find(argument);
        if (it == models_.end()) it = models_.emplace(argument, load_model(argument, "model")).first;
        return it->second;
    }
    // The model loaded for `argument`, or nullptr when it was not (or failed).
    const ModelSpec* find(const std::string& argument) const {
        auto it = models_.find(argument);
        return it == models_.end() ? nullptr : &it->second;
    }

private:
    std::map<std::string, ModelSpec> models_;
};

ScenarioCheck check_scenario(const Scenario& s, const std::string& baseline_path, const Tolerances& tolerances, ModelCache& models,
                             Figures* current) {
    ScenarioCheck c;
    c.name = s.name;
    c.line = s.line;
    try {
        const Gpu* gpu = nullptr;
        try {
            gpu = &find_gpu(known_gpus(), s.inputs.gpu, "gpu");
        } catch (const Error& e) {
            data_error(e.what());
        }
        const ModelSpec& model = models.get(scenario_model_argument(s.inputs.model, baseline_path));
        Efficiency efficiency;
        efficiency.profile.all_to_all = bundled_all_to_all_latencies();  // a DP + EP layout's decode step
        efficiency.profile.nics = bundled_nics();                        // a layout over several nodes
        efficiency.profile.links = bundled_link_latencies();             // and its all-gathers, as roofline prices them
        efficiency.profile.collectives = bundled_collectives();
        if (!s.inputs.calibration.empty()) {
            const std::string path = scenario_file_path(s.inputs.calibration, baseline_path);
            efficiency =
                apply_calibration(efficiency, parse_calibration(read_json_file(path, kMaxConfigBytes, nullptr, JsonKeys::Unique), path), path);
        }
        const ScenarioResult result = evaluate_scenario(model, *gpu, s.inputs, efficiency);
        *current = result.figures;
        c.figures = compare_scenario(s.inputs, s.expected, result.figures, tolerances);
    } catch (const Error& e) {
        c.error = e.what();
        c.error_kind = e.kind() == ErrorKind::Usage ? ErrorKind::Usage : ErrorKind::Data;
    }
    return c;
}

std::string render(const CheckReport& r, const std::string& format) {
    if (format == "json") return render_check_json(r);
    if (format == "junit") return render_check_junit(r);
    if (format == "github") return render_check_github(r);
    if (format == "markdown") return render_check_markdown(r);
    return render_check_text(r);
}

}  // namespace

CommandOutput run_check(const CheckOptions& o, std::ostream& err) {
    if (!o.output.empty()) check_writable(o.output);
    if (o.update) check_writable(o.baseline);
    BaselineFile file = read_baseline_file(o.baseline, !o.update);
    // The file's tolerances, then the flag's items over them.
    Tolerances tolerance{file.baseline.tolerance_ppb.value_or(0), file.baseline.tolerance_by_figure};
    if (!o.tolerance.empty()) tolerance = parse_tolerances("--tolerance", o.tolerance, tolerance);

    CheckReport report;
    report.baseline_path = o.baseline;
    report.tolerances = tolerance;
    report.strict = o.strict;
    report.changes_only = o.changes_only;
    report.width = o.wide ? Width::Wide : Width::Fit;
    ModelCache models;
    std::vector<Figures> current(file.baseline.scenarios.size());
    for (std::size_t i = 0; i < file.baseline.scenarios.size(); ++i)
        report.checks.push_back(check_scenario(file.baseline.scenarios[i], o.baseline, tolerance, models, &current[i]));
    // How each model resolved now, keyed as the baseline names it.
    Provenance provenance{{version(), build_commit()}, {}};
    for (const Scenario& s : file.baseline.scenarios)
        if (const ModelSpec* m = models.find(scenario_model_argument(s.inputs.model, o.baseline)))
            provenance.models[s.inputs.model] = provenance_of(m->source);
    report.provenance = compare_provenance(file.baseline.provenance, provenance);
    report.summary = summarize(report.checks);
    report.exit_code = check_exit_code(report.summary, report.checks, o.strict);

    for (const ScenarioCheck& c : report.checks)
        if (c.error)
            err << "kvplan: error: " << printable(o.baseline) << (c.line > 0 ? ":" + std::to_string(c.line) : std::string()) << ": scenario \""
                << printable(c.name) << "\": " << printable(*c.error) << "\n";

    if (o.update) {
        if (report.summary.errors > 0) {
            err << "kvplan: error: " << printable(o.baseline) << ": not updated: " << report.summary.errors << " scenario(s) could not be computed\n";
        } else {
            nlohmann::ordered_json& list = file.doc["scenarios"];
            for (std::size_t i = 0; i < current.size(); ++i) set_expected(list[i], current[i]);
            set_provenance(file.doc, provenance);
            write_file_atomically(o.baseline, baseline_text(file.doc));
            report.updated = true;
            report.exit_code = 0;
        }
    }

    const std::string text = render(report, o.format);
    if (o.output.empty()) return {text, report.exit_code};
    write_file_atomically(o.output, text);
    return {check_summary_line(report) + "\n", report.exit_code};
}

}  // namespace kvplan
