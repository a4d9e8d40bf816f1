// `kvplan simulate --compare` end to end on the bundled served runs
// (tests/fixtures/reference/serving/): the measured side pinned to what the
// runs' own tools published, the simulated side equal to simulate's own
// figures, the error and the sentence consistent with both.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/sim_cli_support.hpp"
#include "test_support.hpp"

using namespace kvplan::test;

namespace {

const std::string kServing = std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/reference/serving/";

std::vector<std::string> rtx4090(const std::string& run, std::vector<std::string> more) {
    std::vector<std::string> args{"simulate",
                                  "--model",
                                  "llama-3.1-8b",
                                  "--gpu",
                                  "rtx-4090",
                                  "--trace",
                                  kServing + run + "/requests.jsonl",
                                  "--max-num-batched-tokens",
                                  "2048",
                                  "--max-model-len",
                                  "32768",
                                  "--vllm-version",
                                  "0.19.0",
                                  "--compare"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

}  // namespace

TEST_CASE("simulate --compare on the RTX 4090 run: measured from queued_ts beside the simulation, with vLLM's per-second log") {
    const auto r = kvplan_run(rtx4090("RTX4090_Llama-3.1-8B", {"--max-num-seqs", "256", "--json"}));
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    const auto& c = j["compare"];
    CHECK(c["measured_from"] == "queued");
    // The run's summary.txt: TTFT mean 65,456.6 ms, TPOT mean 32.4 ms, latency mean 86,578.3 ms.
    CHECK(c["measured"]["ttft_s"]["mean"].get<double>() == Approx(65.4566).margin(5e-5));
    CHECK(c["measured"]["tpot_s"]["mean"].get<double>() == Approx(0.0324).margin(5e-5));
    CHECK(c["measured"]["e2e_s"]["mean"].get<double>() == Approx(86.5783).margin(5e-5));
    CHECK(c["measured"]["itl_s"].is_null());  // server timestamps hold no per-token times
    // The simulated side is simulate's own summary.
    CHECK(c["simulated"]["ttft_s"]["mean"] == j["ttft_s"]["mean"]);
    CHECK(c["simulated"]["e2e_s"]["p99"] == j["e2e_s"]["p99"]);
    const double m = c["measured"]["e2e_s"]["mean"], s = j["e2e_s"]["mean"];
    CHECK(c["relative_error"]["e2e_mean"].get<double>() == Approx((s - m) / m));
    // Every second of timeseries.csv, beside the simulated second of the same number.
    REQUIRE(c["series"].size() == 184);
    CHECK(c["series"][0]["measured"]["running"] == 5);
    CHECK(c["series"][0]["measured"]["kv_cache_usage"].get<double>() == Approx(0.1322));  // "1.0,3392.0,2.0,5,2,13.22"
    CHECK(c["series"][0]["simulated"]["running"] == j["timeseries"][0]["running"]);       // both logs start at 1 s
    CHECK(j["timeseries"][0]["t_s"] == 1.0);
    // The table says which way kvplan errs, in 100 columns.
    const auto t = kvplan_run(rtx4090("RTX4090_Llama-3.1-8B", {"--max-num-seqs", "256"}));
    REQUIRE(t.code == 0);
    std::string flat = t.out;
    std::replace(flat.begin(), flat.end(), '\n', ' ');
    CHECK(flat.find(s > m ? "kvplan is pessimistic here" : "kvplan is optimistic here") != std::string::npos);
    CHECK(flat.find("from the server's queued_ts") != std::string::npos);
    std::istringstream lines(t.out);
    for (std::string line; std::getline(lines, line);) CHECK(line.size() <= 100);
}

TEST_CASE("simulate --compare on vllm bench serve's result: a closed loop of one client, ITL compared") {
    const auto r = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "rtx-3090", "--trace",
                               kServing + "vllm-bench_RTX3090_vLLM0.17.1/llama31-8b_offload0_conc1_run1.json", "--max-model-len", "8192",
                               "--vllm-version", "0.17.1", "--compare", "--json"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["completed"] == 20);
    const auto& c = j["compare"];
    CHECK(c["measured_from"] == "request_sent");
    CHECK(c["measured"]["ttft_s"]["mean"].get<double>() * 1e3 == Approx(103.75466999985292));  // the file's mean_ttft_ms
    CHECK(c["measured"]["itl_s"]["mean"].get<double>() * 1e3 == Approx(19.159329357030686));   // mean_itl_ms
    CHECK(c["simulated"]["itl_s"]["mean"] == j["itl_s"]["mean"]);
    CHECK(c["series"].empty());
    // One client: never two requests in flight, so no request waits for another.
    CHECK(j["queue_s"]["max"].get<double>() < 1e-3);
}

TEST_CASE("simulate --compare refuses a trace without measured latencies and flags that change the workload") {
    expect_usage_error({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "1", "--requests", "10", "--input-len", "fixed:100",
                        "--output-len", "fixed:10", "--compare"},
                       "--compare needs --trace RUN");
    expect_usage_error({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", "azure-2023-conv", "--compare"},
                       "--compare: azure-2023-conv holds no measured latencies");
    expect_usage_error(rtx4090("RTX4090_Llama-3.1-8B", {"--limit", "10"}), "--compare replays the run as it was measured");
    // A bench result with a negative TTFT: exit 65 naming the file and the field.
    const std::string path = write_temp("bench.json", R"({"input_lens": [10], "output_lens": [5], "ttfts": [-1], "itls": [[]], )"
                                                      R"("request_rate": "inf", "max_concurrency": 1, "duration": 1})");
    const auto r = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", path, "--compare"});
    CHECK(r.code == 65);
    CHECK(r.out.empty());
    CHECK(r.err.find(path + ": ttfts[0]: -1 s: expected 0 to 10^7 s") != std::string::npos);
}

namespace {

// A latency as the compare table prints it: seconds from 1 s, else milliseconds.
std::string latency_cell(double s) {
    return s >= 1 ? fmt::format("{:.2f} s", s) : fmt::format("{:.1f} ms", s * 1e3);
}

// docs/accuracy.md's row for one run: the measured and simulated means and their errors.
std::string accuracy_row(const std::string& label, const std::vector<std::string>& args) {
    const auto r = kvplan_run(args);
    REQUIRE(r.code == 0);
    const auto c = nlohmann::json::parse(r.out)["compare"];
    std::string row = "| " + label + " |";
    for (const char* key : {"ttft_s", "tpot_s", "e2e_s"}) {
        const double m = c["measured"][key]["mean"], s = c["simulated"][key]["mean"];
        row += fmt::format(" {} | {} | {:+.1f}% |", latency_cell(m), latency_cell(s), (s - m) / m * 100);
    }
    return row;
}

}  // namespace

TEST_CASE("docs/accuracy.md's served-run table is what simulate --compare prints now") {
    std::ifstream in(std::string(KVPLAN_SOURCE_DIR) + "/docs/accuracy.md");
    const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::vector<std::pair<std::string, std::vector<std::string>>> runs = {
        {"RTX 4090, vLLM 0.19.0, max_num_seqs 256, 300 ShareGPT requests at 10/s",
         rtx4090("RTX4090_Llama-3.1-8B", {"--max-num-seqs", "256", "--json"})},
        {"RTX 4090, vLLM 0.19.0, max_num_seqs 128, the same requests", rtx4090("RTX4090_Llama-3.1-8B_mns128", {"--max-num-seqs", "128", "--json"})},
        {"RTX 3090, vLLM 0.17.1, one client, 20 requests of 255 + 64 tokens",
         {"simulate", "--model", "llama-3.1-8b", "--gpu", "rtx-3090", "--trace",
          kServing + "vllm-bench_RTX3090_vLLM0.17.1/llama31-8b_offload0_conc1_run1.json", "--max-model-len", "8192", "--vllm-version", "0.17.1",
          "--compare", "--json"}}};
    for (const auto& [label, args] : runs) {
        const std::string row = accuracy_row(label, args);
        INFO(row);
        CHECK(doc.find(row + "\n") != std::string::npos);
    }
}

TEST_CASE("simulate --compare --plot overlays the measured CDFs and per-second log on the simulated, each in its CSV") {
    const auto read = [](const std::filesystem::path& p) {
        std::ifstream in(p);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    const std::filesystem::path dir = std::filesystem::path(write_temp("unused", "")).parent_path() / "plots";
    const auto r = kvplan_run(rtx4090("RTX4090_Llama-3.1-8B", {"--max-num-seqs", "256", "--plot", dir.string()}));
    INFO(r.err);
    REQUIRE(r.code == 0);
    // timeseries.csv's first row "1.0,3392.0,2.0,5,2,13.22": second 1, 5 running, 2 waiting, 13.22% of the KV pool.
    const std::string series = read(dir / "timeseries_measured.csv");
    CHECK(series.rfind("t_s,running,waiting,kv_cache_usage\n1,5,2,0.1322\n", 0) == 0);
    CHECK(std::count(series.begin(), series.end(), '\n') == 185);  // the header and 184 seconds
    // Every one of the 300 measured requests in the CDF's CSV, beside the simulated ones.
    const std::string cdf = read(dir / "latency_cdf.csv");
    CHECK(cdf.find("ttft_measured: all 300 values") != std::string::npos);
    std::size_t rows = 0;
    for (std::size_t at = cdf.find("\nttft_measured,"); at != std::string::npos; at = cdf.find("\nttft_measured,", at + 1)) ++rows;
    CHECK(rows == 300);
    CHECK(read(dir / "latency_cdf.svg").find(">measured</text>") != std::string::npos);
    CHECK(read(dir / "timeseries.svg").find(">waiting, vLLM</text>") != std::string::npos);
    CHECK(read(dir / "timeseries.svg").find(">KV usage, vLLM</text>") != std::string::npos);
    // The max_num_seqs 128 run logged no KV usage: the column is left empty and not drawn.
    const std::filesystem::path dir128 = dir.parent_path() / "plots128";
    REQUIRE(kvplan_run(rtx4090("RTX4090_Llama-3.1-8B_mns128", {"--max-num-seqs", "128", "--plot", dir128.string()})).code == 0);
    CHECK(read(dir128 / "timeseries_measured.csv").find("\n1,8,0,\n") != std::string::npos);  // "1.0,7401.0,28.0,8,0,0.0"
    CHECK(read(dir128 / "timeseries.svg").find("KV usage, vLLM") == std::string::npos);
}
