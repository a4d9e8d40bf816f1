// The help as a new user meets it: `kvplan` alone, `kvplan help [COMMAND]`,
// every --help within 100 columns, and the shell completions generated from
// the command line's own tree (cli/cmd_completions, report/completions).
#include <algorithm>
#include <sstream>

#include <catch2/catch.hpp>

#include "binary_run.hpp"
#include "report/display_width.hpp"

namespace {

using namespace kvplan::test;

const std::vector<std::string> kCommands = {"size",     "concurrency", "models", "gpus",     "engines", "roofline", "recommend",
                                            "simulate", "measure",     "check",  "baseline", "diff",    "help",     "completions"};

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// Runs `script` in bash and returns its stdout (the completion tests below).
std::string bash(const std::string& script) {
    const fs::path file = scratch().write("completion_probe.sh", script);
    const fs::path out = scratch().path() / "completion_probe.out";
    const int status = std::system(("bash " + shell_quote(file.string()) + " > " + shell_quote(out.string()) + " 2>&1").c_str());
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    INFO(text.str());
    CHECK(status == 0);
    return text.str();
}

}  // namespace

TEST_CASE("kvplan with no arguments prints its help and succeeds") {
    const Run bare = Run::kvplan({});
    CHECK(bare.exit_code == 0);
    CHECK(bare.err.empty());
    CHECK(bare.out == Run::kvplan({"--help"}).out);
    CHECK(contains(bare.out, "Usage: kvplan [OPTIONS] [SUBCOMMAND]"));
}

TEST_CASE("kvplan help COMMAND prints that command's help, and an unknown command is a usage error") {
    CHECK(Run::kvplan({"help"}).out == Run::kvplan({"--help"}).out);
    for (const std::string cmd : {"simulate", "check", "size"}) {
        const Run help = Run::kvplan({"help", cmd});
        INFO(cmd);
        CHECK(help.exit_code == 0);
        CHECK(help.out == Run::kvplan({cmd, "--help"}).out);
    }
    const Run unknown = Run::kvplan({"help", "simulat"});
    CHECK(unknown.exit_code == 2);
    CHECK(unknown.out.empty());
    CHECK(unknown.err.rfind("kvplan: error: help: no command named 'simulat' (expected one of size, ", 0) == 0);
    CHECK(std::count(unknown.err.begin(), unknown.err.end(), '\n') == 1);
}

TEST_CASE("every --help, kvplan's own and --help-all fit 100 display cells") {
    std::vector<std::vector<std::string>> runs = {{"--help"}, {"--help-all"}};
    for (const std::string& cmd : kCommands) runs.push_back({cmd, "--help"});
    for (const auto& args : runs) {
        const Run r = Run::kvplan(args);
        INFO(r.command << "\nwidest line: " << kvplan::widest_line(r.out) << " cells");
        CHECK(r.exit_code == 0);
        CHECK(kvplan::widest_line(r.out) <= 100);
    }
    // A wrapped description keeps its words and its column: simulate's
    // --cpu-offload text continues under the description column (30 cells).
    const std::string simulate = Run::kvplan({"simulate", "--help"}).out;
    std::istringstream lines(simulate);
    int continuation_lines = 0;
    for (std::string line; std::getline(lines, line);)
        if (line.size() > 30 && line.compare(0, 30, std::string(30, ' ')) == 0 && line[30] != ' ') ++continuation_lines;
    CHECK(continuation_lines > 10);
}

TEST_CASE("a long help example is continued with a backslash and still runs as one command") {
    // measure's first example is wider than 100 cells on one line: the help
    // breaks it as a shell would read it (size_cmd_test runs every example).
    const std::string help = Run::kvplan({"measure", "--help"}).out;
    CHECK(contains(help,
                   "  kvplan measure --device cpu --model gpt2 --layers 2 --batch 1,8 --context 512 --prompt 64 \\\n"
                   "      --output /tmp/kvplan-host.json\n"));
}

TEST_CASE("completion scripts name every command and every flag, from the command line's own tree") {
    for (const std::string shell : {"bash", "zsh", "fish"}) {
        const Run r = Run::kvplan({"completions", shell});
        INFO(shell);
        REQUIRE(r.exit_code == 0);
        for (const std::string& cmd : kCommands) CHECK(contains(r.out, cmd));
        // A flag of each command that takes a value, and a choice list
        // (measure --device cpu|cuda, from its CLI11 IsMember check).
        CHECK(contains(r.out, "cpu-offload"));
        CHECK(contains(r.out, "kv-dtype"));
        CHECK(contains(r.out, "cpu cuda"));
    }
    CHECK(Run::kvplan({"completions", "tcsh"}).exit_code == 2);
}

TEST_CASE("the bash completion completes commands, flags and an option's choices") {
    const std::string script = Run::kvplan({"completions", "bash"}).out;
    const fs::path file = scratch().write("kvplan.bash", script);
    auto complete = [&](const std::string& words, int cword) {
        return bash("source " + shell_quote(file.string()) + "\nCOMP_WORDS=(" + words + ")\nCOMP_CWORD=" + std::to_string(cword) +
                    "\n_kvplan\necho \"${COMPREPLY[*]}\"\n");
    };
    CHECK(complete("kvplan si", 1) == "size simulate\n");  // in the order `kvplan --help` lists them
    CHECK(complete("kvplan measure --device ''", 3) == "cpu cuda\n");
    const std::string flags = complete("kvplan concurrency --kv-d", 2);
    CHECK(flags == "--kv-dtype\n");
    // The global --gpu-file is offered after a command too (it may follow it).
    CHECK(contains(complete("kvplan size --gpu-f", 2), "--gpu-file"));
}
