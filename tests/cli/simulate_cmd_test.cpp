// `kvplan simulate` end to end (in process): the published traces parse with
// the row counts their README gives, the output is deterministic and within
// 100 columns, and bad traces fail with one line naming the file, line and field.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "io/trace_reader.hpp"
#include "sim_cli_support.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

const std::string kTraces = std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/reference/traces/";

}  // namespace

TEST_CASE("the bundled traces parse with the request counts their sources give") {
    // README of the traces: 19,366 and 8,819 Azure rows, 12,031 Mooncake lines.
    CHECK(read_trace(kTraces + "azure_2023_conv.csv", {}).requests.size() == 19366);
    CHECK(read_trace(kTraces + "azure_2023_code.csv", {}).requests.size() == 8819);
    const Workload m = read_trace(kTraces + "mooncake_conversation.jsonl", {});
    CHECK(m.requests.size() == 12031);
    // Its first row: timestamp 0, 6,758 prompt tokens, 500 output, 14 hash ids of 512 tokens.
    CHECK(m.requests[0].input_tokens == 6758);
    CHECK(m.requests[0].content_keys.size() == 14);
    // Azure's first two rows are 4.314579 s apart (18:15:46.6805900 and 18:15:50.9951690).
    const Workload a = read_trace(kTraces + "azure_2023_conv.csv", {"auto", 1.0, 2});
    CHECK(a.requests[1].arrival_s == Approx(4.314579).margin(1e-6));
    CHECK(read_trace(kTraces + "azure_2023_conv.csv", {"auto", 2.0, 2}).requests[1].arrival_s == Approx(4.314579 / 2).margin(1e-6));
}

TEST_CASE("simulate replays a trace: every request completes, twice the same, within 100 columns") {
    const std::vector<std::string> args{"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", kTraces + "azure_2023_code.csv",
                                        "--limit",  "500",     "--json"};
    auto a = kvplan_run(args), b = kvplan_run(args);
    REQUIRE(a.code == 0);
    CHECK(a.out == b.out);
    const auto j = nlohmann::json::parse(a.out);
    CHECK(j["completed"] == 500);
    // Each p50 <= p90 <= p99 <= max, and TTFT is at least one prefill step.
    for (const char* key : {"ttft_s", "tpot_s", "e2e_s", "queue_s"}) {
        CHECK(j[key]["p50"].get<double>() <= j[key]["p90"].get<double>());
        CHECK(j[key]["p99"].get<double>() <= j[key]["max"].get<double>());
    }
    CHECK(j["ttft_s"]["p50"].get<double>() > 0.0015);
    CHECK(j["goodput_requests_per_s"].is_null());
    CHECK(j["notes"].empty());
    auto t = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", kTraces + "azure_2023_code.csv", "--limit", "500",
                         "--slo", "ttft=2s,tpot=50ms"});
    REQUIRE(t.code == 0);
    std::istringstream lines(t.out);
    for (std::string line; std::getline(lines, line);) CHECK(line.size() <= 100);
    CHECK(t.out.find("met every SLO") != std::string::npos);
}

TEST_CASE("simulate says when --max-model-len passes the model's max_position_embeddings, which the engine refuses by default") {
    // Llama-2-7B's config allows 4,096 positions: vLLM's _get_and_verify_max_len
    // refuses 8,192 unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, SGLang unless
    // SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1. The run goes on, with a note.
    const std::vector<std::string> args{"simulate", "--model",     "llama-2-7b", "--gpu",        "h100-sxm", "--rate",          "2",   "--requests",
                                        "20",       "--input-len", "fixed:5000", "--output-len", "fixed:10", "--max-model-len", "8192"};
    auto t = kvplan_run(args);
    REQUIRE(t.code == 0);
    CHECK_THAT(t.out, Catch::Contains("note: max_model_len 8,192 exceeds the model's max_position_embeddings (4,096); vLLM refuses it"));
    std::vector<std::string> sg = args;
    sg.insert(sg.end(), {"--engine", "sglang", "--json"});
    auto j = kvplan_run(sg);
    REQUIRE(j.code == 0);
    CHECK_THAT(nlohmann::json::parse(j.out)["notes"][0].get<std::string>(), Catch::Contains("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"));
}

TEST_CASE("the pool holds the weights --weights-dtype stores: fp8 linear layers free 3,328 blocks of Llama-3.1-8B on an H100") {
    // Llama-3.1-8B: 8,030,261,248 parameters, of which the untied embedding and head (2 x 128,256 x 4,096)
    // and 65 norms of 4,096 stay 16-bit; the 6,979,321,856 linear weights go from 2 B to 1 B, freeing
    // 6,979,321,856 B = exactly 3,328 blocks of 16 tokens x 131,072 B (32 layers x 8 KV heads x 128 x 2 x 2 B).
    auto blocks = [](const char* weights) {
        auto r = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "1", "--requests", "3", "--input-len", "fixed:10",
                             "--output-len", "fixed:5", "--weights-dtype", weights, "--json"});
        REQUIRE(r.code == 0);
        return nlohmann::json::parse(r.out)["kv_blocks_total"].get<std::int64_t>();
    };
    CHECK(blocks("fp8") - blocks("auto") == 3328);
    CHECK(blocks("nvfp4") > blocks("fp8"));  // 4.5 bits
}

TEST_CASE("a pool made small preempts, and Mooncake's shared prefixes hit the cache") {
    auto r = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", kTraces + "mooncake_conversation.jsonl", "--limit",
                         "300", "--max-model-len", "131072", "--json"});
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    // Its requests share their first 512-token block (hash id 0) and some whole conversations.
    CHECK(j["prefix_cache_hit_rate"].get<double>() > 0.02);
    auto small = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", kTraces + "azure_2023_conv.csv", "--limit", "400",
                             "--time-scale", "20", "--num-gpu-blocks", "600", "--json"});
    REQUIRE(small.code == 0);
    const auto s = nlohmann::json::parse(small.out);
    CHECK(s["preemptions"].get<std::int64_t>() > 0);
    CHECK(s["completed"] == 400);
}

TEST_CASE("simulate --debug-invariants checks docs/invariants.md after every step and changes no figure") {
    // A preempting run of each shape: replicas with CPU offload, SGLang, a DP attention + EP layout, a P/D unit.
    const std::vector<std::vector<std::string>> runs{
        {"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", kTraces + "azure_2023_conv.csv", "--limit", "300", "--time-scale",
         "20", "--num-gpu-blocks", "600", "--cpu-offload", "8GiB", "--replicas", "2", "--json"},
        {"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "sglang", "--trace", kTraces + "azure_2023_conv.csv", "--limit",
         "300", "--time-scale", "20", "--num-gpu-blocks", "20000", "--json"},
        {"simulate", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--dp", "2", "--enable-expert-parallel", "--rate", "20", "--requests", "200",
         "--input-len", "fixed:500", "--output-len", "fixed:50", "--json"},
        {"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--prefill-replicas", "1", "--decode-replicas", "1", "--rate", "10",
         "--requests", "200", "--input-len", "fixed:2000", "--output-len", "fixed:50", "--json"}};
    for (std::vector<std::string> args : runs) {
        INFO(args[3] + " " + args[5] + " " + args[6]);
        const auto plain = kvplan_run(args);
        args.push_back("--debug-invariants");
        const auto checked = kvplan_run(args);
        REQUIRE(plain.code == 0);
        REQUIRE(checked.code == 0);
        CHECK(checked.out == plain.out);
    }
}

TEST_CASE("prefix tokens: a shared system prompt hits the prefix cache in whole blocks") {
    // One client, 10 prompts of 2,000 tokens opening with the same 1,000:
    // the 2nd..10th each reuse 62 blocks of 16 (992 tokens; block 62 also
    // holds their own tokens), so the hit rate is 9 x 992 / 20,000 = 0.4464.
    auto r = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--concurrency", "1", "--requests", "10", "--input-len",
                         "fixed:2000", "--output-len", "fixed:8", "--prefix-tokens", "1000", "--json"});
    REQUIRE(r.code == 0);
    CHECK(nlohmann::json::parse(r.out)["prefix_cache_hit_rate"].get<double>() == Approx(0.4464));
    // SGLang's radix cache matches to the token: 9 x 1,000 / 20,000 = 0.45.
    auto g = kvplan_run({"simulate", "--engine", "sglang", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--concurrency", "1", "--requests", "10",
                         "--input-len", "fixed:2000", "--output-len", "fixed:8", "--prefix-tokens", "1000", "--json"});
    REQUIRE(g.code == 0);
    CHECK(nlohmann::json::parse(g.out)["prefix_cache_hit_rate"].get<double>() == Approx(0.45));
    auto m = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", kTraces + "mooncake_conversation.jsonl", "--limit",
                         "10", "--prefix-tokens", "1000"});
    CHECK(m.code == 2);
    CHECK(m.out.empty());
    CHECK(m.err.find("--prefix-tokens: the trace already says what its prompts share") != std::string::npos);
}

TEST_CASE("a device known by its memory is priced from a calibration file, and refused without one") {
    // Measured 2.0e12 B/s and 5e14 FLOP/s: a batch-1 decode of Llama-3.1-8B
    // streams its 16,060,522,496 B of weights less the embedding table it
    // only gathers a row of (128,256 x 4,096 x 2 B = 1,050,673,152 B) in
    // 7.505 ms, plus the 1.5 ms fixed step and the KV of about 150 cached
    // tokens on average (150 x 131,072 B / 2e12 = 0.0098 ms): TPOT 9.015 ms.
    const std::string cal = write_temp("cal.json", R"({"schema_version": 1, "device": "lab box", "measured_bandwidth_bytes_per_s": 2.0e12,
                                                      "measured_flops_per_s": 5.0e14})");
    auto r = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu-mem", "80GiB", "--calibration", cal, "--concurrency", "1", "--requests", "2",
                         "--input-len", "fixed:100", "--output-len", "fixed:100", "--json"});
    REQUIRE(r.code == 0);
    CHECK(nlohmann::json::parse(r.out)["tpot_s"]["mean"].get<double>() == Approx(0.009015).epsilon(0.002));
    auto bare = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu-mem", "80GiB", "--concurrency", "1", "--requests", "2", "--input-len",
                            "fixed:100", "--output-len", "fixed:100"});
    CHECK(bare.code == 2);
    CHECK(bare.out.empty());
    CHECK(bare.err.find("--gpu-mem SIZE with --calibration FILE") != std::string::npos);
}

TEST_CASE("synthetic traffic: the same seed gives the same run, Poisson rescaled to N / rate") {
    const std::vector<std::string> args{"simulate",
                                        "--model",
                                        "llama-3.1-8b",
                                        "--gpu",
                                        "h100-sxm",
                                        "--rate",
                                        "4",
                                        "--requests",
                                        "200",
                                        "--input-len",
                                        "uniform:100-900",
                                        "--output-len",
                                        "fixed:64",
                                        "--seed",
                                        "3",
                                        "--requests-csv",
                                        write_temp("requests.csv", "")};
    auto a = kvplan_run(args), b = kvplan_run(args);
    REQUIRE(a.code == 0);
    CHECK(a.out == b.out);
    std::ifstream csv(args.back());
    std::string line, last;
    std::int64_t rows = 0;
    std::getline(csv, line);
    while (std::getline(csv, line)) {
        last = line;
        ++rows;
    }
    CHECK(rows == 200);
    // The last request arrives at 200 / 4 = 50 s (vllm bench serve's rescaling).
    CHECK(std::stod(last.substr(last.find(',') + 1)) == Approx(50.0).margin(1e-6));
}

TEST_CASE("bad traces exit 65 with one line naming the file, the line and the field") {
    auto expect = [](const std::string& text, const std::string& what) {
        const std::string path = write_temp("trace.csv", text);
        auto r = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", path});
        CHECK(r.code == 65);
        CHECK(r.out.empty());
        INFO(r.err);
        CHECK(r.err.find(path + what) != std::string::npos);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    };
    expect("arrival_s,input_tokens,output_tokens\n0,100,10\n1,-5,10\n", ":3: input_tokens: -5 tokens: expected 1 to");
    expect("arrival_s,input_tokens,output_tokens\n5,100,10\n1,100,10\n", ":3: arrival: goes back in time");
    expect("arrival_s,input_tokens,output_tokens\nsoon,100,10\n", ":2: arrival_s: expected a time in seconds");
    expect("arrival_s,input_tokens,output_tokens\n0,100\n", ":2: line: expected 3 comma-separated fields");
    expect("arrival_s,input_tokens,output_tokens\n", ": no requests (an empty trace)");
    expect("{\"arrival_time\": 1.5, \"input_toks\": 10}\n", ":1: output_toks: missing");
    expect("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-13-16 18:15:46.68,10,5\n", ":2: TIMESTAMP: expected a date-time");
    expect("arrival_s,input_tokens,output_tokens\n0,100,10\n20000000,100,10\n",
           ":3: arrival: 2e+07 s after the first request: expected at most 10^7 s");
    expect("arrival_s,input_tokens,output_tokens\n0,200000,10\n", ": request 1: 200000 + 10 tokens exceed max_model_len 131072");
}

TEST_CASE("replaying a measured vLLM 0.19 run on an RTX 4090: every request completes, TPOT near the measured") {
    // tests/fixtures/reference/serving/RTX4090_Llama-3.1-8B: 300 ShareGPT
    // requests, max_num_seqs 256, max_num_batched_tokens 2,048, max_model_len
    // 32,768. Measured from its requests.jsonl (TPOT = (last - first token) /
    // (output - 1)): mean TPOT 32.4 ms, mean E2E 86.6 s. Nothing here is
    // fitted to this run; docs/simulate.md has the whole table.
    const std::string run = std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/reference/serving/RTX4090_Llama-3.1-8B/requests.jsonl";
    auto r = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--trace", run, "--max-num-seqs", "256",
                         "--max-num-batched-tokens", "2048", "--max-model-len", "32768", "--json"});
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["completed"] == 300);
    CHECK(j["tpot_s"]["mean"].get<double>() == Approx(0.0324).epsilon(0.10));
    CHECK(j["e2e_s"]["mean"].get<double>() == Approx(86.58).epsilon(0.20));
}

TEST_CASE("simulate --engine sglang runs SGLang's scheduler over the token pool concurrency --engine sglang computes") {
    auto pool = kvplan_run({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "sglang", "--json"});
    REQUIRE(pool.code == 0);
    const std::int64_t tokens = nlohmann::json::parse(pool.out)["kv_cache_tokens"].get<std::int64_t>();
    const std::vector<std::string> args{
        "simulate", "--engine", "sglang", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", kTraces + "azure_2023_code.csv",
        "--limit",  "300",      "--json"};
    auto a = kvplan_run(args), b = kvplan_run(args);
    REQUIRE(a.code == 0);
    CHECK(a.out == b.out);
    const auto j = nlohmann::json::parse(a.out);
    CHECK(j["engine"] == "sglang");
    CHECK(j["completed"] == 300);
    CHECK(j["kv_blocks_total"] == tokens);  // token slots: pages of one token
    CHECK(j["block_size_tokens"] == 1);
    auto vllm = kvplan_run(
        {"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", kTraces + "azure_2023_code.csv", "--limit", "300", "--json"});
    REQUIRE(vllm.code == 0);
    CHECK(nlohmann::json::parse(vllm.out)["engine"] == "vllm");
    // The table says whose scheduler ran, within 100 columns.
    auto t = kvplan_run({"simulate", "--engine", "sglang", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", kTraces + "azure_2023_code.csv",
                         "--limit", "300", "--num-gpu-blocks", "50000"});
    REQUIRE(t.code == 0);
    std::string flat = t.out;  // the header wraps at spaces, where the path's length puts it
    std::replace(flat.begin(), flat.end(), '\n', ' ');
    CHECK(flat.find("SGLang's scheduler (fcfs)") != std::string::npos);
    CHECK(flat.find("KV pool 50,000 tokens (--num-gpu-blocks)") != std::string::npos);
    std::istringstream lines(t.out);
    for (std::string line; std::getline(lines, line);) CHECK(line.size() <= 100);
    // --schedule-policy is SGLang's: lpm runs with it and is refused without it.
    auto lpm = kvplan_run({"simulate", "--engine", "sglang", "--schedule-policy", "lpm", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace",
                           kTraces + "mooncake_conversation.jsonl", "--limit", "100", "--max-model-len", "131072", "--json"});
    REQUIRE(lpm.code == 0);
    CHECK(nlohmann::json::parse(lpm.out)["schedule_policy"] == "lpm");
    CHECK(nlohmann::json::parse(lpm.out)["completed"] == 100);
    auto vllm_lpm = kvplan_run({"simulate", "--schedule-policy", "lpm", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace",
                                kTraces + "azure_2023_code.csv", "--limit", "10"});
    CHECK(vllm_lpm.code == 2);
    CHECK(vllm_lpm.out.empty());
    CHECK(vllm_lpm.err.find("--schedule-policy lpm") != std::string::npos);
    // SGLang's --page-size other than 1 is refused, with one line naming the flag.
    auto bad = kvplan_run({"simulate", "--engine", "sglang", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace",
                           kTraces + "azure_2023_code.csv", "--block-size", "16"});
    CHECK(bad.code == 2);
    CHECK(bad.out.empty());
    CHECK(bad.err.find("--block-size 16") != std::string::npos);
    CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
}

TEST_CASE("simulate --cpu-offload reports the CPU tier, and without it JSON says null") {
    // Llama-3.1-8B on an H100 SXM: 16 x 131,072 B = 2 MiB a block, so 256 GiB
    // is 2^38 / 2^21 = 131,072 host blocks; PCIe Gen5 x16 moves 64 GB/s a
    // direction (models/gpus.json). 300 Mooncake requests on 2,000 GPU blocks
    // evict turns the CPU tier still holds.
    const std::vector<std::string> base{
        "simulate", "--model", "llama-3.1-8b",     "--gpu", "h100-sxm", "--trace", kTraces + "mooncake_conversation.jsonl",
        "--limit",  "300",     "--num-gpu-blocks", "2000"};
    std::vector<std::string> on = base;
    on.insert(on.end(), {"--cpu-offload", "256GiB"});
    auto text = kvplan_run(on);
    REQUIRE(text.code == 0);
    std::replace(text.out.begin(), text.out.end(), '\n', ' ');  // the header line wraps at 100 columns
    CHECK(text.out.find("CPU tier 131,072 blocks (256.00 GiB per rank), host link 64 GB/s per direction") != std::string::npos);
    CHECK(text.out.find("CPU tier hit rate") != std::string::npos);
    CHECK(text.out.find("CPU tier traffic") != std::string::npos);
    on.push_back("--json");
    const auto j = nlohmann::json::parse(kvplan_run(on).out);
    CHECK(j["prefix_cache_hit_rate_cpu"].get<double>() > 0);
    CHECK(j["prefix_cache_hit_rate_gpu"].get<double>() + j["prefix_cache_hit_rate_cpu"].get<double>() ==
          Approx(j["prefix_cache_hit_rate"].get<double>()));
    CHECK(j["offload_bytes"].get<std::int64_t>() % (2 << 20) == 0);
    CHECK(j["onload_bytes"].get<std::int64_t>() > 0);
    std::vector<std::string> off = base;
    off.push_back("--json");
    const auto k = nlohmann::json::parse(kvplan_run(off).out);
    CHECK(k["prefix_cache_hit_rate_cpu"].is_null());
    CHECK(k["prefix_cache_hit_rate_gpu"] == k["prefix_cache_hit_rate"]);
    CHECK(k["offload_bytes"] == 0);
    CHECK(k["onload_bytes"] == 0);
    CHECK(kvplan_run(base).out.find("CPU tier") == std::string::npos);
}

TEST_CASE("simulate and concurrency refuse a bad --cpu-offload with one line and exit 2") {
    const auto expect = [](std::vector<std::string> args, const std::string& what) {
        auto r = kvplan_run(args);
        INFO(r.err);
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK(r.err.find(what) != std::string::npos);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    };
    const std::vector<std::string> sim{"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", "azure-2023-conv", "--limit", "5"};
    const auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> a = sim;
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
    };
    expect(with({"--cpu-offload", "-1GiB"}), "--cpu-offload: expected a size");
    expect(with({"--cpu-offload", "0"}), "--cpu-offload: expected a size");
    expect(with({"--cpu-offload", "nan"}), "--cpu-offload: expected a size");
    expect(with({"--cpu-offload", "1KiB"}), "--cpu-offload: 1024 bytes over 1 rank(s) hold no KV block of 2097152 bytes per rank");
    expect(with({"--cpu-offload", "64GiB", "--engine", "sglang"}), "--cpu-offload: vLLM's OffloadingConnector is simulated");
    expect(with({"--cpu-offload", "64GiB", "--pp", "2"}), "--cpu-offload: KV offload with pipeline parallelism is not simulated");
    expect(with({"--cpu-offload", "64GiB", "--no-prefix-caching"}), "--cpu-offload: the CPU tier is keyed by prefix-cache block hashes");
    expect({"simulate", "--model", "gemma-2-9b", "--gpu", "h100-sxm", "--trace", "azure-2023-conv", "--limit", "5", "--cpu-offload", "64GiB"},
           "--cpu-offload: only models with one full-attention (or MLA) KV-cache group");
    expect({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--cpu-offload", "64GiB"},
           "--cpu-offload: vLLM's OffloadingConnector is modelled; pass --engine vllm");
    expect({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm", "--cpu-offload", "-5GB"},
           "--cpu-offload: expected a size");
}

TEST_CASE("concurrency --cpu-offload prints the tokens the CPU tier holds and the host memory that is") {
    // 64 GiB of 2 MiB blocks: 32,768 blocks x 16 = 524,288 tokens, 68.72 GB.
    auto r = kvplan_run(
        {"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm", "--cpu-offload", "64GiB", "--context", "8192"});
    REQUIRE(r.code == 0);
    CHECK(r.out.find("CPU KV tier (--cpu-offload 64GiB): 32,768 blocks, 524,288 tokens\nhost memory it takes: 64.00 GiB (68.72 GB)\n") !=
          std::string::npos);
    // Llama-3.1-70B at TP 2: 327,680 / 2 x 16 = 2,621,440 B a block per rank;
    // 100 GB / 2 = 5 x 10^10 B per rank holds 19,073 blocks (305,168 tokens),
    // 19,073 x 2,621,440 = 49,999,134,720 B a rank (46.56 GiB), 99,998,269,440 B in all (93.13 GiB).
    auto t = kvplan_run({"concurrency", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "2", "--engine", "vllm", "--cpu-offload", "100GB",
                         "--context", "8192", "--json"});
    REQUIRE(t.code == 0);
    const auto j = nlohmann::json::parse(t.out);
    CHECK(j["cpu_kv_cache_tokens"] == 305168);
    auto text = kvplan_run({"concurrency", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "2", "--engine", "vllm", "--cpu-offload", "100GB",
                            "--context", "8192"});
    CHECK(text.out.find("host memory it takes: 93.13 GiB (100.00 GB), 46.56 GiB on each of 2 ranks") != std::string::npos);
    auto none = kvplan_run({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm", "--json"});
    CHECK(nlohmann::json::parse(none.out)["cpu_kv_cache_tokens"].is_null());
}

TEST_CASE("simulate --spec-method eagle: the drafter's KV shares the pool, each step keeps about 1 + a1 + a1 a2 + a1 a2 a3 tokens, TPOT drops") {
    // Llama-3.1-8B on an H100: 26,212 blocks of 131,072 B a token's 32 layers.
    // The EAGLE head is one more layer of 4,096 B a token, and its weights
    // come out of the pool first: one decoder layer (4096 x 10240 attention +
    // 3 x 4096 x 14336 MLP + 2 x 4096 norms = 218,112,000 bf16 parameters,
    // 436,224,000 B), the final norm (8,192 B) and the 2 x 4096 -> 4096
    // projection (67,108,864 B): 503,341,056 B. The pool keeps
    // floor((26,212 x 16 x 131,072 - 503,341,056) / (16 x 135,168)) = 25,184 blocks. Expected tokens per step
    // 1 + 0.8 + 0.8 x 0.7 + 0.8 x 0.7 x 0.6 = 2.696.
    const std::vector<std::string> base = {"simulate",   "--model", "llama-3.1-8b", "--gpu",      "h100-sxm",     "--rate",    "2",
                                           "--requests", "200",     "--input-len",  "fixed:1024", "--output-len", "fixed:256", "--json"};
    std::vector<std::string> spec = base;
    for (const char* a : {"--spec-method", "eagle", "--spec-tokens", "3", "--acceptance", "0.8,0.7,0.6"}) spec.push_back(a);
    auto plain = kvplan_run(base), fast = kvplan_run(spec);
    REQUIRE(plain.code == 0);
    REQUIRE(fast.code == 0);
    const auto p = nlohmann::json::parse(plain.out), f = nlohmann::json::parse(fast.out);
    CHECK(p["kv_blocks_total"] == 26212);
    CHECK(f["kv_blocks_total"] == 25184);
    CHECK(f["speculative"]["draft_weights_bytes_per_gpu"] == 503'341'056);
    CHECK(p["speculative"].is_null());
    CHECK(f["speculative"]["expected_tokens_per_step"].get<double>() == Approx(2.696));
    CHECK(f["speculative"]["mean_tokens_per_step"].get<double>() == Approx(2.696).epsilon(0.03));
    CHECK(f["speculative"]["draft_kv_bytes_per_token"] == 4096);
    CHECK(f["tpot_s"]["p50"].get<double>() < 0.6 * p["tpot_s"]["p50"].get<double>());
    CHECK(f["completed"] == 200);
    // Refused where it is not simulated, before any work.
    for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
             {"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "1", "--requests", "5", "--spec-tokens", "3"},
             {"simulate", "--engine", "sglang", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "1", "--requests", "5", "--spec-method",
              "eagle", "--spec-tokens", "2", "--acceptance", "0.7"},
             {"simulate", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "2", "--pp", "2", "--rate", "1", "--requests", "5",
              "--spec-method", "eagle", "--spec-tokens", "2", "--acceptance", "0.7"}}) {
        auto r = kvplan_run(bad);
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK(r.err.find("kvplan: error: --spec") != std::string::npos);
    }
}

TEST_CASE("simulate --spec-method draft: the draft model's weights and KV come out of the pool, by hand") {
    // Llama-3.1-70B at TP 4 on H100s: 26,871 blocks of 16 tokens x 81,920 B
    // (80 layers x 2 KV heads per rank x 128 x 2 x 2 B) = 35,219,865,600 B.
    // The Llama-3.1-8B draft: 16,060,522,496 B of weights / 4 = 4,015,130,624
    // per GPU first, then 32,768 B a token per rank beside the target's:
    // floor(31,204,734,976 / (16 x 114,688)) = 17,005 blocks.
    const std::vector<std::string> base = {"simulate",   "--model", "llama-3.1-70b", "--gpu",      "h100-sxm",     "--tp",     "4",     "--rate", "1",
                                           "--requests", "20",      "--input-len",   "fixed:1024", "--output-len", "fixed:64", "--json"};
    std::vector<std::string> spec = base;
    for (const char* a : {"--spec-method", "draft", "--draft-model", "llama-3.1-8b", "--spec-tokens", "4", "--acceptance", "0.7"}) spec.push_back(a);
    auto plain = kvplan_run(base), draft = kvplan_run(spec);
    REQUIRE(plain.code == 0);
    REQUIRE(draft.code == 0);
    CHECK(nlohmann::json::parse(plain.out)["kv_blocks_total"] == 26871);
    const auto j = nlohmann::json::parse(draft.out);
    CHECK(j["kv_blocks_total"] == 17005);
    CHECK(j["speculative"]["draft_weights_bytes_per_gpu"] == 4015130624LL);
    CHECK(j["speculative"]["draft_kv_bytes_per_token"] == 32768);
    // A draft model that is not there is named by its own flag.
    std::vector<std::string> missing = base;
    for (const char* a : {"--spec-method", "draft", "--draft-model", "/nonexistent/config.json", "--spec-tokens", "2", "--acceptance", "0.7"})
        missing.push_back(a);
    auto m = kvplan_run(missing);
    CHECK(m.code == 2);
    CHECK(m.out.empty());
    CHECK(m.err.find("--draft-model /nonexistent/config.json: no such file") != std::string::npos);
}
