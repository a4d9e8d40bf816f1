#include "cli/cmd_gpus.hpp"

#include "cli/flag_checks.hpp"
#include "io/gpu_db.hpp"
#include "report/gpus_report.hpp"

namespace kvplan {

CLI::App* setup_gpus(CLI::App& app, GpusOptions& o) {
    CLI::App* cmd = app.add_subcommand("gpus", "list the accelerators in the hardware database (memory, bandwidth, TFLOP/s, links)");
    CLI::Option* json_flag = cmd->add_flag("--json", o.json, "print JSON");
    cmd->add_option("--format", o.format, "table|json|markdown")
        ->check(CLI::IsMember({"table", "json", "markdown"}))
        ->excludes(json_flag);  // one way to say it
    cmd->add_flag("--schema", o.schema, "print the JSON Schema of a device file (for --gpu-file FILE or KVPLAN_GPU_FILE)")->excludes(json_flag);
    add_wide_flag(*cmd, o.wide);
    cmd->footer(
        "Examples:\n  kvplan gpus\n  kvplan gpus --wide   # with the devices' names\n  kvplan gpus --schema\n  kvplan concurrency --model "
        "llama-3.1-8b --gpu h100\n"
        "Add or replace devices with a file of the same schema: kvplan --gpu-file our-gpus.json gpus");
    return cmd;
}

std::string run_gpus(const GpusOptions& o) {
    if (o.schema) return gpu_file_schema();
    const std::string format = o.json ? "json" : o.format;
    if (format == "json") return render_gpus_json(known_gpus());
    if (format == "markdown") return render_gpus_markdown(known_gpus());
    return render_gpus_table(known_gpus(), o.wide ? Width::Wide : Width::Fit);
}

}  // namespace kvplan
