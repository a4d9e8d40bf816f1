#include "cli/cmd_completions.hpp"

#include "core/error.hpp"
#include "report/completions.hpp"

namespace kvplan {

CLI::App* setup_completions(CLI::App& app, CompletionsOptions& o) {
    CLI::App* cmd = app.add_subcommand("completions", "print a shell completion script for bash, zsh or fish");
    cmd->add_option("shell", o.shell, "bash, zsh or fish")->required()->check(CLI::IsMember({"bash", "zsh", "fish"}));
    cmd->footer(
        "Examples:\n"
        "  kvplan completions bash   # then: source <(kvplan completions bash)\n"
        "  kvplan completions fish   # or save it as ~/.config/fish/completions/kvplan.fish\n"
        "`cmake --install` installs all three where each shell looks for them.");
    return cmd;
}

CLI::App* setup_help(CLI::App& app, HelpOptions& o) {
    CLI::App* cmd = app.add_subcommand("help", "print kvplan's help, or one command's (the same as COMMAND --help)");
    cmd->add_option("command", o.command, "the command whose help to print");
    cmd->footer("Examples:\n  kvplan help\n  kvplan help simulate");
    return cmd;
}

namespace {

// The values an option names through CLI11's IsMember check, which its type
// name carries as ":{a,b,c}" (CLI11's Option::get_type_name).
std::vector<std::string> choices_of(const CLI::Option& opt) {
    const std::string type = opt.get_type_name();
    const std::size_t open = type.find(":{"), close = type.find('}', open == std::string::npos ? 0 : open);
    std::vector<std::string> out;
    if (open == std::string::npos || close == std::string::npos) return out;
    const std::string list = type.substr(open + 2, close - open - 2);
    for (std::size_t start = 0; start <= list.size();) {
        std::size_t end = list.find(',', start);
        if (end == std::string::npos) end = list.size();
        if (end > start) out.push_back(list.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

std::vector<CompletionOption> options_of(const CLI::App& app) {
    std::vector<CompletionOption> out;
    for (const CLI::Option* opt : app.get_options()) {
        if (opt->get_positional() || opt->get_lnames().empty()) continue;
        CompletionOption o;
        o.long_names = opt->get_lnames();
        o.short_names = opt->get_snames();
        o.takes_value = opt->get_type_size() != 0;
        o.choices = choices_of(*opt);
        o.description = opt->get_description();
        out.push_back(std::move(o));
    }
    return out;
}

}  // namespace

std::string run_completions(const CLI::App& app, const CompletionsOptions& o) {
    std::vector<CompletionCommand> commands;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        commands.push_back({sub->get_name(), sub->get_description(), options_of(*sub)});
    return completion_script(o.shell, app.get_name(), options_of(app), commands);
}

std::string run_help(CLI::App& app, const HelpOptions& o) {
    if (o.command.empty()) return app.help();
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        if (sub->get_name() == o.command) return sub->help(app.get_name());  // as `kvplan COMMAND --help` prints it
    std::string names;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names += (names.empty() ? "" : ", ") + sub->get_name();
    throw Error(ErrorKind::Usage, "help: no command named '" + o.command + "' (expected one of " + names + ")");
}

}  // namespace kvplan
