#include "cli/app.hpp"

#include <algorithm>
#include <exception>
#include <new>

#include <CLI/CLI.hpp>

#include "cli/cmd_baseline.hpp"
#include "cli/cmd_check.hpp"
#include "cli/cmd_completions.hpp"
#include "cli/cmd_concurrency.hpp"
#include "cli/cmd_diff.hpp"
#include "cli/cmd_engines.hpp"
#include "cli/cmd_gpus.hpp"
#include "cli/cmd_measure.hpp"
#include "cli/cmd_models.hpp"
#include "cli/cmd_recommend.hpp"
#include "cli/cmd_roofline.hpp"
#include "cli/cmd_simulate.hpp"
#include "cli/cmd_size.hpp"
#include "cli/flag_checks.hpp"
#include "cli/help_format.hpp"
#include "cli/version.hpp"
#include "core/error.hpp"
#include "io/engine_db.hpp"
#include "io/gpu_db.hpp"
#include "report/printable.hpp"

namespace kvplan {

namespace {

int run_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    CLI::App app("kvplan: KV-cache and GPU capacity planner for LLM serving", "kvplan");
    app.formatter(std::make_shared<FittedHelp>());  // before the commands: each copies it
    app.set_version_flag("--version", version_line());
    app.set_help_all_flag("--help-all", "print the help of kvplan and of every command (the man page is made of it)");
    app.footer(
        "Examples:\n"
        "  kvplan size --model llama-3.1-8b --context 8192 --batch 32\n"
        "  kvplan concurrency --model llama-3.1-8b --gpu h100-sxm --context 4096,32768\n"
        "  kvplan roofline --model llama-3.1-8b --gpu h100-sxm --context 4096\n"
        "  kvplan recommend --model llama-3.1-8b --context 8192 --ttft 0.5 --tpot 0.05\n"
        "  kvplan diff --model llama-3.1-8b --model qwen3-8b --gpu h100-sxm\n"
        "  kvplan baseline --model llama-3.1-8b --gpu h100-sxm --context 4096,32768 --output capacity.json\n"
        "  kvplan check --baseline capacity.json --tolerance 0.5%\n"
        "  kvplan models\n"
        "  kvplan gpus\n"
        "  kvplan engines\n"
        "  kvplan completions bash\n"
        "Run `kvplan help <command>` or `kvplan <command> --help` for a command's flags.");

    std::string gpu_file;
    app.add_option("--gpu-file", gpu_file,
                   "devices to add to, or replace in, the hardware database: a JSON file of the same schema (`kvplan gpus --schema`); "
                   "default: $KVPLAN_GPU_FILE");
    std::string engine_file;
    app.add_option("--engine-file", engine_file,
                   "engine speed profiles to add to, or replace in, the bundled ones: a JSON file holding one profile or an array "
                   "of them, as models/engines/*.json (docs/roofline.md, \"Engine profiles\"); default: $KVPLAN_ENGINE_FILE");

    SizeOptions size;
    ConcurrencyOptions concurrency;
    ModelsOptions models;
    GpusOptions gpus;
    EnginesOptions engines;
    RooflineOptions roofline;
    RecommendOptions recommend;
    SimulateOptions simulate;
    MeasureOptions measure;
    CheckOptions check;
    BaselineOptions baseline;
    DiffOptions diff;
    CLI::App* size_cmd = setup_size(app, size);
    CLI::App* concurrency_cmd = setup_concurrency(app, concurrency);
    CLI::App* models_cmd = setup_models(app, models);
    CLI::App* gpus_cmd = setup_gpus(app, gpus);
    CLI::App* engines_cmd = setup_engines(app, engines);
    CLI::App* roofline_cmd = setup_roofline(app, roofline);
    CLI::App* recommend_cmd = setup_recommend(app, recommend);
    CLI::App* simulate_cmd = setup_simulate(app, simulate);
    CLI::App* measure_cmd = setup_measure(app, measure);
    CLI::App* check_cmd = setup_check(app, check);
    CLI::App* baseline_cmd = setup_baseline(app, baseline);
    CLI::App* diff_cmd = setup_diff(app, diff);
    HelpOptions help;
    CompletionsOptions completions;
    CLI::App* help_cmd = setup_help(app, help);
    CLI::App* completions_cmd = setup_completions(app, completions);

    // --gpu-file may follow the command too (kvplan concurrency --gpu-file F ...).
    for (CLI::App* command : app.get_subcommands({})) command->fallthrough();

    // A bare `kvplan` asks what it can do: the help, not an error. In `kvplan
    // help simulate` the command's name is help's argument, which CLI11 would
    // take for the command itself: help is read here, before the parse.
    if (args.empty()) {
        out << app.help();
        return kExitOk;
    }
    if (args[0] == "help" && (args.size() == 1 || (args.size() == 2 && args[1].rfind('-', 0) != 0))) {
        help.command = args.size() == 2 ? args[1] : "";
        try {
            out << run_help(app, help);
        } catch (const Error& e) {
            err << "kvplan: error: " << printable(e.what()) << "\n";
            return kExitUsage;
        }
        return kExitOk;
    }
    try {
        std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last-first
        app.parse(reversed);
    } catch (const CLI::CallForHelp&) {
        out << app.help();
        return kExitOk;
    } catch (const CLI::CallForAllHelp&) {
        out << app.help("", CLI::AppFormatMode::All);
        return kExitOk;
    } catch (const CLI::CallForVersion&) {
        out << version_line() << "\n";
        return kExitOk;
    } catch (const CLI::ParseError& e) {
        err << "kvplan: error: " << printable(e.what()) << " (run `kvplan --help`)\n";
        return kExitUsage;
    }

    try {
        use_gpu_file(gpu_file);
        use_engine_file(engine_file);
        for (const CLI::App* command : app.get_subcommands()) {
            refuse_empty_list_items(*command, args);
            refuse_empty_values(*command);
            refuse_outputs_over_inputs(app, *command);
            warn_deprecated_flags(*command, err);
        }
        std::string text;
        int code = kExitOk;
        if (check_cmd->parsed()) {
            CommandOutput result = run_check(check, err);
            text = std::move(result.text);
            code = result.exit_code;
        } else if (size_cmd->parsed()) text = run_size(size);
        else if (concurrency_cmd->parsed()) text = run_concurrency(concurrency);
        else if (models_cmd->parsed()) text = run_models(models);
        else if (gpus_cmd->parsed()) text = run_gpus(gpus);
        else if (engines_cmd->parsed()) text = run_engines(engines);
        else if (roofline_cmd->parsed()) text = run_roofline(roofline);
        else if (recommend_cmd->parsed()) {
            CommandOutput result = run_recommend(recommend, &err);
            text = std::move(result.text);
            code = result.exit_code;
        } else if (simulate_cmd->parsed()) text = run_simulate(simulate);
        else if (measure_cmd->parsed()) text = run_measure(measure, err);
        else if (baseline_cmd->parsed()) text = run_baseline(baseline, err);
        else if (diff_cmd->parsed()) text = run_diff(diff);
        else if (help_cmd->parsed()) text = run_help(app, help);
        else if (completions_cmd->parsed()) text = run_completions(app, completions);
        else {
            err << "kvplan: error: no command given (expected size, concurrency, roofline, recommend, simulate, measure, diff, baseline, check, "
                   "models, gpus or engines; run `kvplan --help`)\n";
            return kExitUsage;
        }
        out << text;
        out.flush();
        return code;
    } catch (const Error& e) {
        err << "kvplan: error: " << printable(e.what()) << "\n";
        if (e.kind() == ErrorKind::Unavailable) return kExitUnavailable;
        return e.kind() == ErrorKind::Usage ? kExitUsage : kExitDataErr;
    }
}

}  // namespace

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    try {
        return run_command(args, out, err);
    } catch (const std::bad_alloc&) {
        err << "kvplan: error: out of memory: the run needs more than this machine gives it "
               "(fewer requests, replicas or blocks need less)\n";
    } catch (const std::exception& e) {
        err << "kvplan: error: internal error: " << printable(e.what()) << " (a bug in kvplan: please report it)\n";
    } catch (...) {
        err << "kvplan: error: internal error: an unknown exception (a bug in kvplan: please report it)\n";
    }
    return kExitInternal;
}

}  // namespace kvplan
