// Every command's default text output fits 100 display cells (io/table.hpp,
// kFitColumns), end to end through the real binary: each --help example and
// the runs the docs quote. `--wide` still prints what the fitted tables
// leave out. `measure` times this machine and is left out here.
#include <sstream>

#include <catch2/catch.hpp>

#include "binary_run.hpp"
#include "report/display_width.hpp"

namespace {

using namespace kvplan::test;

constexpr std::size_t kLimit = 100;

// The first line of `text` wider than the limit, or "" when every line fits.
std::string too_wide(const std::string& text) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
        if (kvplan::display_width(line) > kLimit) return line;
    return "";
}

void check_fits(const Run& r) {
    INFO(r.command << "\n" << r.err);
    CHECK(r.signal == 0);
    CHECK((r.exit_code == 0 || r.exit_code == 1));  // check exits 1 on a regression, and still prints its table
    CHECK(!r.out.empty());
    INFO("widest line: " << kvplan::widest_line(r.out) << " cells");
    CHECK(too_wide(r.out) == "");
}

std::string source(const std::string& relative) {
    return std::string(KVPLAN_SOURCE_DIR) + "/" + relative;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("every help example of every command with a table prints lines of at most 100 display cells") {
    // The check and diff examples read configs/our-model, configs/old and
    // configs/new, and capacity.json, which the first baseline example writes.
    const fs::path dir = scratch().path() / "width_examples";
    for (const char* name : {"our-model", "old", "new"}) {
        fs::create_directories(dir / "configs" / name);
        fs::copy_file(source("models/presets/llama-3.1-8b.json"), dir / "configs" / name / "config.json", fs::copy_options::overwrite_existing);
    }
    fs::current_path(dir);
    for (const char* cmd : {"size", "concurrency", "roofline", "models", "gpus", "engines", "baseline", "check", "diff", "recommend", "simulate"}) {
        std::istringstream help(Run::kvplan({cmd, "--help"}).out);
        int examples = 0;
        for (std::string line; std::getline(help, line);) {
            if (line.rfind("  kvplan ", 0) != 0) continue;
            for (std::string more; !line.empty() && line.back() == '\\' && std::getline(help, more);) line = line.substr(0, line.size() - 1) + more;
            line = line.substr(0, line.find('#'));
            std::istringstream words(line.substr(9));
            std::vector<std::string> args;
            std::string redirect;
            // JSON, JUnit and GitHub commands are for programs, and --wide asks
            // for full width: neither is limited.
            bool fitted = true;
            for (std::string w; words >> w;) {
                if (w == ">") words >> redirect;
                else args.push_back(w);
                fitted = fitted && w != "--json" && w != "--format" && w != "--schema" && w != "--wide";
            }
            Run r = Run::kvplan(args);
            if (!redirect.empty()) std::ofstream(dir / redirect) << r.out;
            if (fitted) check_fits(r);
            ++examples;
        }
        INFO(cmd);
        CHECK(examples > 0);
    }
}

TEST_CASE("the runs the docs quote, and every bundled preset, print lines of at most 100 display cells") {
    const std::vector<std::vector<std::string>> runs = {
        {"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"},
        {"roofline", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4", "--price-per-hour", "2.5"},
        {"roofline", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--weights-dtype", "fp8"},
        {"models"},
        {"gpus"},
        {"engines"},
        {"engines", "--show", "trtllm"},
        {"roofline", "--model", "llama-3.1-8b", "--gpu", "a100-sxm-80gb", "--engine", "gpt-fast", "--batch", "1"},
        {"diff", "--model", "llama-3.1-8b", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--context", "4096,32768", "--engine", "vllm"},
        {"diff", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpu", "h200", "--tp", "4", "--engine", "vllm", "--context", "8192"},
        {"diff", "--model", "qwen2.5-7b", "--kv-dtype", "auto", "--kv-dtype", "fp8", "--context", "131072", "--batch", "256"},
        {"check", "--baseline", source("docs/examples/capacity.json")},
        {"check", "--baseline", source("docs/examples/capacity-edited.json")},
        {"check", "--baseline", source("docs/examples/capacity-edited.json"), "--changes-only"},
        {"check", "--baseline", source("tests/baseline/presets.json")},
        {"concurrency", "--model", "llama-3.1-70b", "--gpu", "a100-80gb", "--tp", "4", "--gpus", "8", "--engine", "vllm", "--context", "8192,32768"},
        {"concurrency", "--model", "llama-3.1-8b", "--gpu-mem", "40GB", "--allocation", "contiguous", "--max-tokens", "4000", "--context",
         "200,1000,4000"},
        {"concurrency", "--model", "qwen2.5-7b", "--gpu", "l40s", "--engine", "sglang", "--context", "8192"},
        {"baseline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "4096"},
        // docs/simulate.md's CPU offload run: its summary had a 104-column row.
        {"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--limit", "1000", "--time-scale", "0.1", "--trace",
         source("tests/fixtures/reference/traces/mooncake_conversation.jsonl"), "--cpu-offload", "1TiB"},
    };
    for (const auto& args : runs) check_fits(Run::kvplan(args));
    for (const char* preset : {"llama-2-7b", "llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "qwen2.5-7b", "qwen3-8b", "gemma-2-9b", "gemma-3-1b",
                               "phi-4", "falcon-7b", "deepseek-v3", "gpt-oss-120b", "gpt2", "gpt-j-6b", "mamba-2.8b"}) {
        check_fits(Run::kvplan({"size", "--model", preset}));
        check_fits(Run::kvplan({"concurrency", "--model", preset, "--gpu", "h200", "--engine", "vllm", "--context", "8192"}));
    }
}

TEST_CASE("wide output still prints what the fitted tables leave out") {
    // gpus: the names, and units in every cell.
    const Run gpus = Run::kvplan({"gpus"}), gpus_wide = Run::kvplan({"gpus", "--wide"});
    CHECK(!contains(gpus.out, "NVIDIA H100 SXM 80GB"));
    CHECK(contains(gpus_wide.out, "NVIDIA H100 SXM 80GB"));
    CHECK(contains(gpus_wide.out, "link per direction"));
    CHECK(contains(gpus_wide.out, "3350 GB/s"));
    // The host link to CPU memory: only in --wide (and Markdown), which is not bound to 100 columns.
    CHECK(!contains(gpus.out, "host link per direction"));
    CHECK(contains(gpus_wide.out, "host link per direction"));
    const Run markdown = Run::kvplan({"gpus", "--format", "markdown"});
    CHECK(contains(markdown.out, "host link per direction"));
    // GH200: NVLink 4 (450 GB/s per direction) to other GPUs and NVLink-C2C (900 GB/s bidirectional) to Grace.
    CHECK(
        contains(markdown.out, "| gh200 | NVIDIA GH200 96GB HBM3 (Hopper GPU) | 95.58 GiB | - | 4000 GB/s | 989 | 1979 | - | 450 GB/s | 450 GB/s |"));
    CHECK(contains(markdown.out, "| 800 GB/s | 53.96 | - | - | - | unified |"));  // M2 Ultra: no separate host link
    // models: the Hugging Face id and the model type.
    const Run models = Run::kvplan({"models"}), models_wide = Run::kvplan({"models", "--wide"});
    CHECK(!contains(models.out, "meta-llama/Llama-3.1-8B-Instruct"));
    CHECK(contains(models_wide.out, "meta-llama/Llama-3.1-8B-Instruct"));
    CHECK(contains(models_wide.out, "hf id"));
    CHECK(contains(models_wide.out, "gemma3_text"));
    // diff: B - A and the exact bytes.
    const std::vector<std::string> diff = {"diff", "--model", "llama-3.1-8b", "--model", "qwen3-8b", "--context", "4096"};
    std::vector<std::string> diff_wide = diff;
    diff_wide.push_back("--wide");
    const Run d = Run::kvplan(diff), dw = Run::kvplan(diff_wide);
    CHECK(!contains(d.out, "B - A  "));
    CHECK(contains(dw.out, "B - A"));
    CHECK(contains(dw.out, "16,060,522,496 (14.96 GiB)"));
    CHECK(contains(dw.out, "weights per GPU (bytes)"));
    // check: the scenario on every row.
    const Run cw = Run::kvplan({"check", "--baseline", source("docs/examples/capacity.json"), "--wide"});
    CHECK(contains(cw.out, "llama-3.1-8b/h100-sxm/tp1/vllm/4096   kv_bytes_per_token"));
    // roofline: the step's formula as the last term's name.
    const Run rw = Run::kvplan({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--wide"});
    CHECK(contains(rw.out, "step = max(memory, compute) + overhead + all-reduce     9.76 ms"));
    // concurrency: each overhead term's basis as a column.
    const Run ow = Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--wide"});
    CHECK(contains(ow.out, "overhead term                              basis"));
    // size accepts --wide too: the same tables, long lines unwrapped.
    const Run sw = Run::kvplan({"size", "--model", "mamba-2.8b", "--wide"});
    CHECK(sw.exit_code == 0);
    CHECK(kvplan::widest_line(sw.out) > kLimit);
}

TEST_CASE("one unit family per line: weights print in GiB beside GiB budgets, not GB") {
    const Run c = Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"});
    CHECK(contains(c.out, "weights bf16 (14.96 GiB in all)"));
    CHECK(!contains(c.out, "16.06 GB"));
    const Run r = Run::kvplan({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"});
    CHECK(contains(r.out, "(14.96 GiB per GPU)"));
    CHECK(!contains(r.out, " GB "));
}
