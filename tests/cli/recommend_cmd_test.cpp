// `kvplan recommend` end to end through the real binary: the printed engine
// commands run as pasted (the preset's Hugging Face id, DP replicas, the
// planned memory fraction) and the default output fits 100 columns.
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "binary_run.hpp"

using kvplan::test::Run;

namespace {

// The widest line of `text`, in display cells (kvplan prints ASCII only).
std::size_t widest_line(const std::string& text) {
    std::istringstream in(text);
    std::size_t widest = 0;
    for (std::string line; std::getline(in, line);) widest = std::max(widest, line.size());
    return widest;
}

// The vllm serve command as printed, its " \\" continuations joined.
std::string vllm_command(const std::string& out) {
    const auto start = out.find("  vllm serve ");
    if (start == std::string::npos) return "";
    std::string cmd;
    std::istringstream in(out.substr(start));
    for (std::string line; std::getline(in, line);) {
        const bool more = line.size() >= 2 && line.compare(line.size() - 2, 2, " \\") == 0;
        cmd += (more ? line.substr(0, line.size() - 2) : line) + " ";
        if (!more) break;
    }
    return cmd;
}

}  // namespace

TEST_CASE("recommend prints a vllm command with the Hugging Face id, DP replicas and the memory fraction, within 100 columns") {
    const Run r = Run::kvplan({"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "0.5", "--tpot", "0.05", "--gpus",
                               "h100-sxm", "--num-gpus", "8"});
    INFO(r.command << "\n" << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const std::string vllm = vllm_command(r.out);
    CHECK_THAT(vllm, Catch::StartsWith("  vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 1 "));
    CHECK_THAT(vllm, Catch::Contains("--data-parallel-size 8 ") && Catch::Contains("--gpu-memory-utilization 0.90 ") &&
                         Catch::Contains("--max-num-batched-tokens ") && Catch::Contains("--max-model-len 8192 "));
    CHECK_THAT(r.out, Catch::Contains("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 1 --dp 8"));
    CHECK_THAT(r.out, Catch::Contains("trtllm-serve meta-llama/Llama-3.1-8B-Instruct --tp_size 1 "));
    CHECK(r.out.find("MODEL") == std::string::npos);
    CHECK(widest_line(r.out) <= 100);
}

TEST_CASE("recommend default output fits 100 columns for every help example, and --wide prints more") {
    const Run narrow = Run::kvplan({"recommend", "--model", "llama-3.1-70b", "--context", "32768", "--ttft", "2", "--tpot", "0.04",
                                    "--price-per-hour", "h100-sxm=2.5,h200=3.5,a100-80gb=1.6"});
    INFO(narrow.out);
    REQUIRE(narrow.exit_code == 0);
    CHECK(widest_line(narrow.out) <= 100);
    CHECK_THAT(narrow.out, Catch::Contains("Rejected, closest first") && Catch::Contains(": misses TTFT 2000.0 ms ("));
    const Run wide = Run::kvplan({"recommend", "--model", "llama-3.1-70b", "--context", "32768", "--ttft", "2", "--tpot", "0.04",
                                  "--price-per-hour", "h100-sxm=2.5,h200=3.5,a100-80gb=1.6", "--wide"});
    REQUIRE(wide.exit_code == 0);
    CHECK_THAT(wide.out, Catch::Contains("tok/s per GPU") && Catch::Contains("max batched tokens"));
    CHECK(widest_line(wide.out) > 100);
    CHECK_THAT(wide.out, Catch::Contains("does not fit one request of 32,768 tokens"));
}

TEST_CASE("recommend names the target each rejected configuration misses, in the table and the JSON, and exits 1 when none qualifies") {
    const Run r = Run::kvplan({"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "0.5", "--tpot", "0.001", "--gpus",
                               "h100-sxm,l4"});
    INFO(r.out);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("Nothing meets both targets") && Catch::Contains("misses TPOT 1.0 ms ("));
    CHECK(widest_line(r.out) <= 100);
    const Run j = Run::kvplan({"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "0.5", "--tpot", "0.001", "--gpus",
                               "h100-sxm,l4", "--json"});
    CHECK(j.exit_code == 1);
    CHECK_THAT(j.out, Catch::Contains("\"missed\": [\n        \"tpot\"\n      ]"));
}
