// `kvplan simulate --prefill-replicas P --decode-replicas D` end to end (in
// process): each side's pool is what `concurrency --engine vllm` gives for
// its device and TP, the transfer is priced for the decode side's layout,
// the output keeps other runs' keys, and flags that cannot combine are
// refused in one line.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "sim_cli_support.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

std::int64_t vllm_blocks(const std::string& gpu_id, const std::string& tp) {
    auto r = kvplan_run({"concurrency", "--model", "llama-3.1-8b", "--gpu", gpu_id, "--tp", tp, "--engine", "vllm", "--json"});
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out)["num_blocks"].get<std::int64_t>();
}

}  // namespace

TEST_CASE("simulate P/D: each pool is concurrency's for its device and TP, the transfer priced for the decode TP") {
    // One 3,000-token prompt, 5 output tokens; prefill on an H200 at TP 1,
    // decode on H100s at TP 2. Llama-3.1-8B bf16 KV: 2 x 32 layers x 8 heads
    // x 128 x 2 B = 131,072 B per token; each of 2 decode ranks holds 4 heads,
    // 65,536 B. Over ib-ndr (50 GB/s): 25 us + 3,000 x 65,536 / 50e9 s =
    // 3.957 ms.
    const std::string trace = write_temp("one.csv", "arrival_s,input_tokens,output_tokens\n0,3000,5\n");
    auto r = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", trace, "--prefill-replicas", "1", "--decode-replicas",
                         "1", "--prefill-gpu", "h200", "--decode-tp", "2", "--json"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["kv_transfer_bytes_per_token"] == 65'536);
    CHECK(j["kv_transfer_s"]["max"].get<double>() == Approx(25e-6 + 3000.0 * 65'536 / 50e9).epsilon(1e-12));
    CHECK(j["prefill_pool"]["kv_blocks_per_replica"] == vllm_blocks("h200", "1"));
    CHECK(j["decode_pool"]["kv_blocks_per_replica"] == vllm_blocks("h100-sxm", "2"));
    CHECK(j["prefill_pool"]["tp"] == 1);
    CHECK(j["decode_pool"]["tp"] == 2);
    CHECK(j["prefill_pool"]["max_num_batched_tokens"] == 8192);  // vLLM's default on a large device (engine.cpp default_max_batched_tokens)
    CHECK(j["prefill_pool"]["replicas"][0]["steps"] == 1);       // so the prompt is one step
    CHECK(j["decode_pool"]["replicas"][0]["steps"] == 5);        // the last prompt token again, then 4 decodes
    CHECK(j["completed"] == 1);
    CHECK(j["replicas"].size() == 2);
}

TEST_CASE("simulate P/D with a link given in GB/s, layer by layer, exposes the last layer's share") {
    // 3,000 tokens x 131,072 B = 393,216,000 B at decode TP 1 over 80 GB/s:
    // 4.9152 ms on the wire, of which the last of Llama-3.1-8B's 32 layers'
    // share, 0.1536 ms, follows the prefill; plus the 25 us latency.
    const std::string trace = write_temp("one.csv", "arrival_s,input_tokens,output_tokens\n0,3000,5\n");
    auto r = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", trace, "--prefill-replicas", "1", "--decode-replicas",
                         "1", "--kv-link", "80GB/s", "--layerwise-transfer", "--json"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["kv_link_bytes_per_s"].get<double>() == 80e9);
    CHECK(j["kv_transfer_layerwise"] == true);
    CHECK(j["kv_transfer_s"]["p50"].get<double>() == Approx(25e-6 + 393'216'000 / 80e9 / 32).epsilon(1e-12));
}

TEST_CASE("simulate P/D on a bundled trace: the table within 100 columns names both pools and the transfer") {
    auto t = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", "azure-2023-code", "--limit", "300",
                         "--prefill-replicas", "1", "--decode-replicas", "2", "--kv-link", "nvlink", "--router", "least-loaded"});
    INFO(t.err);
    REQUIRE(t.code == 0);
    std::istringstream lines(t.out);
    for (std::string line; std::getline(lines, line);) CHECK(line.size() <= 100);
    CHECK(t.out.find("prefill: 1 x NVIDIA H100 SXM 80GB") != std::string::npos);
    CHECK(t.out.find("decode: 2 x NVIDIA H100 SXM 80GB") != std::string::npos);
    CHECK(t.out.find("KV transfer: nvlink, 450.0 GB/s") != std::string::npos);
    CHECK(t.out.find("decode 1") != std::string::npos);
    CHECK(t.out.find("300 of 300") != std::string::npos);
    // An aggregated run has no transfer (null) and no pools.
    auto a = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", "azure-2023-code", "--limit", "50", "--json"});
    REQUIRE(a.code == 0);
    const auto j = nlohmann::json::parse(a.out);
    CHECK(j.at("kv_transfer_s").is_null());
    CHECK_FALSE(j.contains("prefill_pool"));
}

TEST_CASE("simulate P/D refuses flags that cannot combine, in one line") {
    const std::vector<std::string> base{"simulate",   "--model", "llama-3.1-8b", "--gpu",     "h100-sxm",     "--rate",  "1",
                                        "--requests", "5",       "--input-len",  "fixed:100", "--output-len", "fixed:10"};
    const auto with = [&](std::vector<std::string> more) {
        std::vector<std::string> a = base;
        a.insert(a.end(), more.begin(), more.end());
        return a;
    };
    expect_usage_error(with({"--prefill-replicas", "0", "--decode-replicas", "1"}), "--prefill-replicas");
    expect_usage_error(with({"--prefill-replicas", "1", "--decode-replicas", "0"}), "--decode-replicas");
    expect_usage_error(with({"--prefill-replicas", "1"}), "--prefill-replicas needs --decode-replicas");
    expect_usage_error(with({"--decode-replicas", "2"}), "--decode-replicas needs --prefill-replicas");
    expect_usage_error(with({"--prefill-replicas", "1", "--decode-replicas", "1", "--kv-link", "carrier-pigeon"}), "--kv-link carrier-pigeon");
    expect_usage_error(with({"--prefill-replicas", "1", "--decode-replicas", "1", "--kv-link", "0GB/s"}), "--kv-link 0GB/s");
    expect_usage_error(with({"--prefill-replicas", "1", "--decode-replicas", "1", "--engine", "sglang"}), "--engine vllm");
    expect_usage_error(with({"--prefill-replicas", "1", "--decode-replicas", "1", "--pp", "2"}), "--pp 1");
    expect_usage_error(with({"--prefill-replicas", "1", "--decode-replicas", "1", "--replicas", "2"}), "--replicas");
    expect_usage_error(with({"--kv-link", "roce"}), "need --prefill-replicas and --decode-replicas");
    expect_usage_error(with({"--prefill-replicas", "1", "--decode-replicas", "1", "--decode-gpu", "l40s", "--kv-link", "nvlink"}),
                       "--kv-link nvlink");
    // Llama-3.1-8B's 14.96 GiB of bf16 weights exceed 0.9 x a T4's 14.56 GiB:
    // the refusal says that the decode pool is the one without room.
    expect_usage_error(with({"--prefill-replicas", "1", "--decode-replicas", "1", "--decode-gpu", "t4"}),
                       "the decode pool (NVIDIA T4 16GB, TP 1): the model leaves no KV cache memory on NVIDIA T4 16GB");
}
