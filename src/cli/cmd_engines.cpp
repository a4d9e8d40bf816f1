#include "cli/cmd_engines.hpp"

#include "io/engine_db.hpp"
#include "report/engines_report.hpp"

namespace kvplan {

CLI::App* setup_engines(CLI::App& app, EnginesOptions& o) {
    CLI::App* cmd = app.add_subcommand("engines", "list the engine speed profiles (--engine) and what each value was fitted on");
    CLI::Option* json_flag = cmd->add_flag("--json", o.json, "print JSON: every profile and the interconnect latency table");
    cmd->add_option("--format", o.format, "table|json|markdown")->check(CLI::IsMember({"table", "json", "markdown"}))->excludes(json_flag);
    cmd->add_option("--show", o.show, "one profile: every value, with the measurements it was fitted on (with --json: a file --engine-file reads)");
    cmd->footer(
        "Examples:\n  kvplan engines\n  kvplan engines --show llamacpp\n"
        "  kvplan roofline --model llama-3.1-8b --gpu rtx-4090 --engine llamacpp --weights-dtype q4_k_m --batch 1 --context 512");
    return cmd;
}

std::string run_engines(const EnginesOptions& o) {
    const std::string format = o.json ? "json" : o.format;
    if (!o.show.empty()) {
        const EngineProfile& p = find_engine("--show", o.show);
        return format == "json" ? render_engine_file_json(p) : render_engine_detail(p, format == "markdown");
    }
    if (format == "json") return render_engines_json(known_engines(), bundled_link_latencies());
    return render_engines_table(known_engines(), format == "markdown");
}

}  // namespace kvplan
