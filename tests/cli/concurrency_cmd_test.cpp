// `kvplan concurrency` and `kvplan gpus` in process, through run().
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/app.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

TEST_CASE("concurrency --json carries the documented keys, every number with its unit") {
    auto r = kvplan_run({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100", "--context", "4096,32768", "--json"});
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    auto j = nlohmann::json::parse(r.out);
    for (const char* key : {"gpu", "gpu_memory_bytes", "mem_util", "weights_bytes_per_gpu", "overhead_bytes", "kv_pool_bytes",
                            "kv_bytes_per_token_per_gpu", "block_size_tokens", "kv_cache_tokens", "contexts"}) {
        INFO(key);
        CHECK(j.contains(key));
    }
    CHECK(j["gpu"] == "h100-sxm");
    CHECK(j["kv_bytes_per_token_per_gpu"] == 131072);
    CHECK(j["block_size_tokens"] == 16);
    REQUIRE(j["contexts"].size() == 2);
    CHECK(j["contexts"][0]["context_tokens"] == 4096);
    CHECK(j["contexts"][0]["kv_bytes_per_request"] == 4096LL * 131072);
    // Quadrupling the context (or more) divides the requests accordingly: 8x the context, at most 1/8 the requests.
    CHECK(j["contexts"][1]["max_requests"].get<std::int64_t>() <= j["contexts"][0]["max_requests"].get<std::int64_t>() / 8);
    // Pool = usable - weights - overhead.
    CHECK(j["kv_pool_bytes"].get<std::int64_t>() == static_cast<std::int64_t>(j["gpu_memory_bytes"].get<double>() * 0.9) -
                                                        j["weights_bytes_per_gpu"].get<std::int64_t>() - j["overhead_bytes"].get<std::int64_t>());
}

TEST_CASE("concurrency --engine vllm prints the lines vLLM logs") {
    auto r =
        kvplan_run({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm", "--max-model-len", "8192", "--context", "8192"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("Available KV cache memory: ") && Catch::Contains(" GiB"));
    CHECK_THAT(r.out, Catch::Contains("GPU KV cache size: "));
    CHECK_THAT(r.out, Catch::Contains("Maximum concurrency for 8,192 tokens per request: "));
    auto j = nlohmann::json::parse(kvplan_run({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "sglang", "--json"}).out);
    REQUIRE(j.contains("engine_log_lines"));
    CHECK_THAT(j["engine_log_lines"][0].get<std::string>(), Catch::StartsWith("KV Cache is allocated. #tokens: "));
}

TEST_CASE("concurrency answers in words") {
    auto r = kvplan_run({"concurrency", "--layers", "32", "--kv-heads", "32", "--head-dim", "128", "--gpu-mem", "40GB", "--mem-util", "1",
                         "--weights", "14GB", "--overhead", "2GB", "--context", "2000,8000,500", "--block-size", "1"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("At 2,000 tokens one 40GB GPU holds 22 requests of manual; at 8,000, 5; at 500, 91."));
}

TEST_CASE("concurrency says when nothing fits and what TP would") {
    auto r = kvplan_run({"concurrency", "--model", "llama-3.1-70b", "--gpu", "l40s", "--context", "8192", "--json"});
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["fits"] == false);
    CHECK(j["smallest_tp_that_fits"].is_number());
    auto text = kvplan_run({"concurrency", "--model", "llama-3.1-70b", "--gpu", "l40s", "--context", "8192"});
    CHECK_THAT(text.out, Catch::Contains("Nothing fits") && Catch::Contains("smallest TP that fits"));
}

TEST_CASE("concurrency renders markdown and csv from the same figures") {
    auto md = kvplan_run({"concurrency", "--model", "qwen3-8b", "--gpu", "a100-80gb", "--context", "4096", "--format", "markdown"});
    REQUIRE(md.code == 0);
    CHECK_THAT(md.out, Catch::Contains("| context |"));
    auto csv = kvplan_run({"concurrency", "--model", "qwen3-8b", "--gpu", "a100-80gb", "--context", "4096,8192", "--format", "csv"});
    REQUIRE(csv.code == 0);
    // The run's model, GPU (its database id: a100-80gb is an alias), engine and parallelism lead every row.
    CHECK_THAT(csv.out, Catch::StartsWith("model,gpu,engine,tp,pp,kv_dtype,context_tokens,max_requests,"));
    CHECK(csv.out.find("\nqwen3-8b,a100-sxm-80gb,generic,1,1,bf16,4096,") != std::string::npos);
    CHECK(std::count(csv.out.begin(), csv.out.end(), '\n') == 3);
}

TEST_CASE("every preset plans on an H100 with every engine") {
    for (const char* model : {"llama-2-7b", "llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "qwen2.5-7b", "qwen3-8b", "gemma-2-9b", "gemma-3-1b",
                              "phi-4", "falcon-7b", "deepseek-v3", "gpt-oss-120b", "gpt2", "gpt-j-6b", "mamba-2.8b"})
        for (const char* engine : {"generic", "vllm", "sglang", "trtllm"}) {
            INFO(model << " " << engine);
            auto r = kvplan_run({"concurrency", "--model", model, "--gpu", "h100", "--engine", engine, "--json"});
            CHECK(r.code == 0);
            CHECK(r.err.empty());
        }
}

TEST_CASE("gpus lists the database") {
    auto r = kvplan_run({"gpus", "--json"});
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j.size() == 53);  // the 53 records of models/gpus.json (models/GPUS_SOURCES.md)
    CHECK(j[0]["id"] == "h100-sxm");
    CHECK(j[0]["memory_bytes"] == 81'559LL * 1'048'576);
    // H100 SXM's host link: PCIe Gen5 x16, 128 GB/s bidirectional = 64 GB/s per direction.
    CHECK(j[0]["host_link"] == "PCIe Gen5 x16");
    CHECK(j[0]["host_link_bytes_per_s_per_direction"] == 64'000'000'000LL);
    auto text = kvplan_run({"gpus"});
    CHECK_THAT(text.out, Catch::Contains("h100-sxm") && Catch::Contains("tpu-v6e"));
}

TEST_CASE("concurrency names the longest --max-model-len that fits one request and max_num_seqs requests") {
    // By hand: Llama-3.1-8B in bf16 caches 32 x 8 x 128 x 2 x 2 B = 131,072 B per
    // token, so a 16-token block is 2 MiB and a 2 GiB pool holds 1,024 blocks:
    // one request of 1,024 x 16 = 16,384 tokens, or 4 of 256 x 16 = 4,096.
    for (const char* engine : {"vllm", "generic"}) {
        auto r = kvplan_run({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", engine, "--kv-pool", "2GiB", "--max-num-seqs",
                             "4", "--context", "131072", "--json"});
        INFO(engine << "\n" << r.err);
        REQUIRE(r.code == 0);
        const auto j = nlohmann::json::parse(r.out);
        CHECK(j["longest_max_model_len_one_request_tokens"] == 16384);
        CHECK(j["longest_max_model_len_max_num_seqs_tokens"] == 4096);
    }
    // vLLM's ValueError then carries its estimate (vllm/v1/core/kv_cache_utils.py,
    // _check_enough_kv_cache_memory and estimate_max_model_len); --wide prints
    // the log line whole, as vLLM does, where the fitted text wraps it.
    auto text = kvplan_run({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm", "--kv-pool", "2GiB", "--max-num-seqs",
                            "4", "--context", "131072", "--max-model-len", "131072", "--wide"});
    REQUIRE(text.code == 0);
    CHECK(text.out.find("Based on the available memory, the estimated maximum model length is 16384. Try increasing "
                        "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.") != std::string::npos);
    CHECK(text.out.find("Longest --max-model-len for one request: 16,384 tokens;\nfor 4 requests (--max-num-seqs): 4,096 tokens.\n") !=
          std::string::npos);
}

TEST_CASE("replaying a log needs no device: --kv-pool alone is the whole budget") {
    // A vLLM log's "Available KV cache memory: 51.20 GiB" for Llama-3.1-8B: 51.2 GiB
    // = 54,975,581,389 B (rounded) over 2 MiB blocks (16 x 131,072 B) is 26,214
    // blocks, 419,424 tokens.
    auto r = kvplan_run({"concurrency", "--model", "llama-3.1-8b", "--engine", "vllm", "--kv-pool", "51.2GiB", "--context", "4096"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("KV cache: 26,214 blocks, 419,424 tokens") != std::string::npos);
    // Only the given pool in the budget: no computed lines that would not add up to it, no overhead terms.
    CHECK(r.out.find("KV pool (given by --kv-pool)  54,975,581,389  51.20") != std::string::npos);
    CHECK(r.out.find("weights on this GPU") == std::string::npos);
    CHECK(r.out.find("overhead term") == std::string::npos);
    // With a device, the pool must fit in it.
    auto big = kvplan_run({"concurrency", "--model", "llama-3.1-8b", "--gpu", "l4", "--kv-pool", "40GiB"});
    CHECK(big.code == 2);
    CHECK(big.err.find("--kv-pool (42,949,672,960 B) exceeds the device's memory") != std::string::npos);
}

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
    const std::string path = (std::filesystem::temp_directory_path() / name).string();
    std::ofstream(path) << text;
    return path;
}

// A team's device file: one new accelerator, and the H100 with measured figures.
const char* kOurGpus = R"json({"schema_version": 1, "gpus": [
  {"id": "our-accel", "name": "Our Accelerator 48GB", "aliases": ["oa48"], "memory_bytes": 51539607552,
   "memory_bandwidth_bytes_per_s": 1000000000000, "memory_technology": "GDDR6", "peak_tflops": {"bf16": 200}},
  {"id": "h100-sxm", "name": "NVIDIA H100 SXM 80GB (our clocks)", "memory_bytes": 85520809984,
   "memory_bandwidth_bytes_per_s": 3000000000000, "memory_technology": "HBM3", "peak_tflops": {"bf16": 900}}]})json";

}  // namespace

TEST_CASE("a device file (gpu-file flag or KVPLAN_GPU_FILE) adds devices and replaces bundled ones, validated field by field") {
    const std::string file = write_temp("kvplan_our_gpus.json", kOurGpus);
    // A new device, by its alias; 48 GiB = 51,539,607,552 B as the file says.
    auto added = kvplan_run({"--gpu-file", file, "concurrency", "--model", "llama-3.1-8b", "--gpu", "oa48", "--context", "4096", "--json"});
    REQUIRE(added.code == 0);
    CHECK(nlohmann::json::parse(added.out)["gpu_memory_bytes"] == 51539607552LL);
    // The flag may follow the command, and a bundled id is replaced: 3.0 TB/s instead of the datasheet's 3.35.
    auto replaced = kvplan_run({"gpus", "--gpu-file", file, "--json"});
    REQUIRE(replaced.code == 0);
    bool found = false;
    for (const auto& g : nlohmann::json::parse(replaced.out))
        if (g["id"] == "h100-sxm") {
            found = true;
            CHECK(g["memory_bandwidth_bytes_per_s"] == 3000000000000LL);
            // The file gives no host link: unknown, not the bundled H100's PCIe Gen5.
            CHECK(g["host_link"] == "");
            CHECK(g["host_link_bytes_per_s_per_direction"] == 0);
        }
    CHECK(found);
    // KVPLAN_GPU_FILE does the same when no flag is given; without either, the bundled database.
    ::setenv("KVPLAN_GPU_FILE", file.c_str(), 1);
    CHECK(kvplan_run({"concurrency", "--model", "llama-3.1-8b", "--gpu", "our-accel", "--context", "4096"}).code == 0);
    ::unsetenv("KVPLAN_GPU_FILE");
    CHECK(kvplan_run({"concurrency", "--model", "llama-3.1-8b", "--gpu", "our-accel", "--context", "4096"}).code == 2);
    // A typo is an error naming the file, the field and the keys expected.
    const std::string bad = write_temp(
        "kvplan_bad_gpus.json",
        R"({"schema_version": 1, "gpus": [{"id": "x", "memory_bytes": 80000000000, "memory_bandwidth_bytes_per_s": 3350000000000, "memory_bandwith": 3}]})");
    auto typo = kvplan_run({"--gpu-file", bad, "gpus"});
    CHECK(typo.code == 65);
    CHECK_THAT(typo.err, Catch::Contains("kvplan_bad_gpus.json: gpus[0].memory_bandwith: unknown key (expected one of: id, name,"));
    // A negative host-link figure is a data error naming the file and the field; nothing on stdout.
    const std::string negative =
        write_temp("kvplan_bad_host_link.json",
                   R"({"schema_version": 1, "gpus": [{"id": "x", "memory_bytes": 80000000000, "memory_bandwidth_bytes_per_s": 3350000000000,
                                                 "host_link": "PCIe Gen5 x16", "host_link_bytes_per_s_per_direction": -64000000000}]})");
    auto bad_link = kvplan_run({"--gpu-file", negative, "gpus"});
    CHECK(bad_link.code == 65);
    CHECK(bad_link.out.empty());
    CHECK_THAT(bad_link.err, Catch::Contains("kvplan_bad_host_link.json: gpus[0].host_link_bytes_per_s_per_direction"));
    // An id that is another device's alias would make --gpu ambiguous.
    const std::string clash =
        write_temp("kvplan_clash_gpus.json",
                   R"({"schema_version": 1, "gpus": [{"id": "h100", "memory_bytes": 80000000000, "memory_bandwidth_bytes_per_s": 3350000000000}]})");
    auto ambiguous = kvplan_run({"--gpu-file", clash, "gpus"});
    CHECK(ambiguous.code == 65);
    CHECK_THAT(ambiguous.err, Catch::Contains("is already an alias of the bundled device \"h100-sxm\""));
}

TEST_CASE("gpus --schema prints the JSON Schema of a device file, which the bundled database follows") {
    auto r = kvplan_run({"gpus", "--schema"});
    REQUIRE(r.code == 0);
    const auto schema = nlohmann::json::parse(r.out);
    CHECK(schema["required"] == nlohmann::json::array({"schema_version", "gpus"}));
    // Every key of every bundled device is one the schema names.
    const auto& allowed = schema["$defs"]["device"]["properties"];
    const auto db = nlohmann::json::parse(std::ifstream(std::string(KVPLAN_SOURCE_DIR) + "/models/gpus.json"));
    for (const auto& g : db["gpus"])
        for (auto it = g.begin(); it != g.end(); ++it) {
            INFO(g["id"] << ": " << it.key());
            CHECK(allowed.contains(it.key()));
        }
}

TEST_CASE("concurrency --vllm-version picks vLLM's sampler path and is checked") {
    // vLLM 0.19 profiles its sampler with the in-place Triton top-k/top-p kernel: 256 rows x 128,256 x 14 B
    // + a 65,667,072 B buffer, where 0.16.0 sorted (38 B); the newer release leaves a larger pool.
    const std::vector<std::string> base = {"concurrency", "--model", "llama-3.1-8b",    "--gpu", "rtx-4090",
                                           "--engine",    "vllm",    "--max-model-len", "32768", "--max-num-batched-tokens",
                                           "2048",        "--json"};
    auto with = [&](const std::string& version) {
        std::vector<std::string> args = base;
        args.insert(args.end(), {"--vllm-version", version});
        return kvplan_run(args);
    };
    const auto sort = with("0.16.0"), triton = with("0.17.1"), graphs = with("0.19.0"), rc = with("0.19.1rc1");
    REQUIRE(sort.code == 0);
    REQUIRE(triton.code == 0);
    REQUIRE(graphs.code == 0);
    REQUIRE(rc.code == 0);
    const auto pool = [](const CliResult& r) { return nlohmann::json::parse(r.out)["kv_pool_bytes"].get<std::int64_t>(); };
    // The sampler side shrinks by (20,971,520 + 1,247,674,368) - (20,971,520 + 525,336,576) = 722,337,792 B.
    CHECK(pool(triton) - pool(sort) == 722'337'792);
    // From 0.18 the discarded CUDA-graph profile leaves its residue, 0.60 GiB = 644,245,094 B.
    CHECK(pool(triton) - pool(graphs) == 644'245'094);
    CHECK(pool(rc) == pool(graphs));
    CHECK(nlohmann::json::parse(triton.out)["overhead_terms"][2]["basis"].get<std::string>().find("Triton buffer") != std::string::npos);
    // The list, and a release kvplan does not know (exit 2, naming the nearest).
    const auto list = kvplan_run({"concurrency", "--vllm-version", "list"});
    CHECK(list.code == 0);
    CHECK(list.out.find("0.18  Triton sampler; CUDA-graph profile inside memory_profiling (residue)") != std::string::npos);
    const auto unknown = with("0.28.0");
    CHECK(unknown.code == 2);
    CHECK(unknown.out.empty());
    CHECK(unknown.err.find("the nearest is 0.27") != std::string::npos);
    for (const std::string bad : {"latest", "0", "0.x", "1.2.3.4", "0..19"}) {
        INFO(bad);
        const auto r = with(bad);
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK(r.err.find("--vllm-version") != std::string::npos);
        CHECK(r.err.find('\n') == r.err.size() - 1);  // one line
    }
    // --cpu-offload-gb 12 on Llama-3.1-8B: 29 whole layers (436,224,000 B each) then qkv_proj, o_proj and
    // gate_up_proj of the 30th (with its 16,384 B of norms, which kvplan lists first) pass 12 GiB: 12,969,279,488 B
    // leave the GPU, and 3,091,243,008 B stay (vLLM logs 2.91 GiB with the 32 MiB rotary cache).
    const auto offload = kvplan_run({"concurrency", "--model", "llama-3.1-8b", "--gpu", "rtx-3090", "--engine", "vllm", "--vllm-version", "0.17.1",
                                     "--max-model-len", "8192", "--cpu-offload-gb", "12"});
    REQUIRE(offload.code == 0);
    CHECK(offload.out.find("weights on this GPU                         3,091,243,008") != std::string::npos);
    for (const char* flag : {"--enforce-eager", "--cpu-offload-gb"}) {
        std::vector<std::string> args = {"concurrency", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--engine", "sglang", flag};
        if (std::string(flag) == "--cpu-offload-gb") args.push_back("4");
        const auto r = kvplan_run(args);
        CHECK(r.code == 2);
        CHECK(r.err.find(std::string(flag) + " applies to --engine vllm only") != std::string::npos);
    }
    const auto other = kvplan_run({"concurrency", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--engine", "sglang", "--vllm-version", "0.19.0"});
    CHECK(other.code == 2);
    CHECK(other.out.empty());
    CHECK(other.err.find("--vllm-version applies to --engine vllm only") != std::string::npos);
}

// DeepSeek-V3 on 8 H200, DP 8 + EP 8 (figures derived in tests/core/memory/scale_out_test.cpp
// from the preset's parts: 32 of 256 experts = 81,758,552,064 B on each GPU).
TEST_CASE("concurrency --dp --enable-expert-parallel --json adds the scale-out keys") {
    auto r = kvplan_run({"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "vllm", "--tp", "1", "--dp", "8",
                         "--enable-expert-parallel", "--context", "4096,32768", "--json"});
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["gpus"] == 8);
    CHECK(j["dp"] == 8);
    CHECK(j["ep"] == 8);
    CHECK(j["attention_tp"] == 1);
    CHECK(j["experts_per_gpu"] == 32);
    CHECK(j["expert_weights_bytes_per_gpu"] == 81'758'552'064LL);
    // every other part whole at TP 1: 19,082,195,296
    CHECK(j["dense_weights_bytes_per_gpu"] == 19'082'195'296LL);
    CHECK(j["weights_bytes_per_gpu"] == 100'840'747'360LL);
    // 23,209 blocks x 16 = 371,344 tokens per DP rank, x 8 = 2,970,752 (the bf16 copy of kv_b_proj
    // out of the pool, scale_out_test.cpp).
    CHECK(j["kv_cache_tokens"] == 371'344);
    CHECK(j["kv_cache_tokens_total"] == 2'970'752);
    CHECK(j["contexts"][0]["max_requests"] == 90);
    CHECK(j["contexts"][0]["max_requests_all_dp_ranks"] == 720);
    CHECK(j["contexts"][1]["max_requests_all_dp_ranks"] == 88);
    CHECK(j["answer"].get<std::string>().find("720 requests") != std::string::npos);
}

TEST_CASE("concurrency with SGLang DP attention names every weight part and its split") {
    auto r = kvplan_run({"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "sglang", "--tp", "8", "--dp", "8", "--ep", "8",
                         "--context", "4096,32768"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("8 GPUs (TP 8 = DP 8 x attention TP 1, EP 8, PP 1)"));
    CHECK_THAT(r.out, Catch::Contains("32 of 256 experts (EP 8)"));
    CHECK_THAT(r.out, Catch::Contains("dp_attention.py compute_dp_attention_world_info"));
    // 323,065 tokens per DP rank: 78 requests of 4,096 tokens each, 624 on the 8 ranks.
    CHECK_THAT(r.out, Catch::Contains("323,065 tokens per DP rank"));
    CHECK_THAT(r.out, Catch::Contains("hold 624 requests of deepseek-v3; at 32,768, 72."));
    // SGLang divides its chunked prefill over the DP ranks: 8,192 / 8.
    CHECK_THAT(r.out, Catch::Contains("8,192 batched tokens (1,024 a DP rank)"));
    // 1,024 is under the 2,048 SGLang gives one small GPU: a note says so; the
    // published wide-EP launch's 524,288 (65,536 a rank) draws none.
    CHECK_THAT(r.out, Catch::Contains("SGLang divides --chunked-prefill-size 8,192 over the 8 DP ranks: 1,024 prompt tokens a rank"));
    const auto wide = kvplan_run({"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "sglang", "--tp", "8", "--dp", "8", "--ep",
                                  "8", "--max-num-batched-tokens", "524288"});
    REQUIRE(wide.code == 0);
    CHECK_THAT(wide.out, Catch::Contains("524,288 batched tokens (65,536 a DP rank)"));
    CHECK_THAT(wide.out, !Catch::Contains("SGLang divides --chunked-prefill-size"));
}

TEST_CASE("concurrency --engine trtllm --tp 8 --dp 8 --ep 8: TensorRT-LLM's attention DP, every part but the experts whole") {
    // tests/core/memory/scale_out_test.cpp derives the figures: 596,608 tokens
    // per DP rank, 145 requests of 4,096 tokens each, 1,160 on the 8 ranks.
    auto r = kvplan_run({"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "trtllm", "--tp", "8", "--dp", "8", "--ep", "8",
                         "--context", "4096,32768"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("TensorRT-LLM, 8 GPUs (TP 8 = DP 8 x attention TP 1, EP 8, PP 1)"));
    CHECK_THAT(r.out, Catch::Contains("enable_attention_dp, each GPU its own rank"));
    CHECK_THAT(r.out, Catch::Contains("596,608 tokens per DP rank"));
    CHECK_THAT(r.out, Catch::Contains("hold 1,160 requests of deepseek-v3; at 32,768, 144."));
    auto j = nlohmann::json::parse(
        kvplan_run({"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "trtllm", "--tp", "8", "--dp", "8", "--ep", "8", "--json"})
            .out);
    CHECK(j["dp"] == 8);
    CHECK(j["ep"] == 8);
    CHECK(j["expert_weights_bytes_per_gpu"] == 81'758'552'064);
    CHECK(j["dense_weights_bytes_per_gpu"] == 19'082'195'296);
    CHECK(j["kv_cache_tokens_total"] == 4'772'864);
}

TEST_CASE("concurrency without the scale-out flags prints no scale-out keys") {
    auto j = nlohmann::json::parse(kvplan_run({"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--json"}).out);
    CHECK_FALSE(j.contains("dp"));
    CHECK_FALSE(j.contains("kv_cache_tokens_total"));
    CHECK_FALSE(j["contexts"][0].contains("max_requests_all_dp_ranks"));
}

TEST_CASE("concurrency --weights-dtype fp8 sizes the weights as simulate's pool does: 3,328 blocks more for Llama-3.1-8B on an H100") {
    // As simulate_cmd_test derives: the 6,979,321,856 linear weights go from
    // 2 B to 1 B, the embedding, head and norms stay 16-bit, freeing exactly
    // 3,328 blocks of 16 tokens x 131,072 B = 53,248 tokens.
    auto tokens = [](const char* weights) {
        auto r =
            kvplan_run({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm", "--weights-dtype", weights, "--json"});
        REQUIRE(r.code == 0);
        const auto j = nlohmann::json::parse(r.out);
        CHECK(j["weights_dtype"] == (std::string(weights) == "auto" ? "bf16" : weights));
        return j["kv_cache_tokens"].get<std::int64_t>();
    };
    CHECK(tokens("fp8") - tokens("auto") == 53248);
    // The same pool in simulate (tests/cli/simulate_cmd_test.cpp): 472,640 tokens.
    auto s = kvplan_run({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "1", "--requests", "3", "--input-len", "fixed:10",
                         "--output-len", "fixed:5", "--weights-dtype", "fp8", "--json"});
    REQUIRE(s.code == 0);
    CHECK(nlohmann::json::parse(s.out)["kv_blocks_total"].get<std::int64_t>() * 16 == tokens("fp8"));
}

TEST_CASE("concurrency --nodes places a DP/EP layout on nodes without changing memory, and warns when attention TP spans them") {
    // SGLang TP 16 = DP 16 x attention TP 1 over two nodes of 8 H200s: the
    // same pool per DP rank as on one link of 16.
    const std::vector<std::string> base = {"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "sglang",
                                           "--tp",        "16",      "--dp",        "16",    "--ep", "16",       "--json"};
    auto with = [&](std::initializer_list<std::string> more) {
        std::vector<std::string> a = base;
        a.insert(a.end(), more);
        return a;
    };
    const auto two = kvplan_run(with({"--nodes", "2"}));
    REQUIRE(two.code == 0);
    const auto j = nlohmann::json::parse(two.out);
    CHECK(j["nodes"] == 2);
    CHECK(j["gpus_per_node"] == 8);
    const auto flat = nlohmann::json::parse(kvplan_run(with({"--gpus-per-node", "16"})).out);
    CHECK(flat["nodes"] == 1);
    CHECK(flat["kv_cache_tokens"] == j["kv_cache_tokens"]);
    CHECK_FALSE(nlohmann::json::parse(kvplan_run(base).out).contains("nodes"));  // without the flags, as before
    // vLLM TP 16 with EP over two nodes of 8: the attention's all-reduces cross the NIC.
    const auto tp = kvplan_run({"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "vllm", "--tp", "16",
                                "--enable-expert-parallel", "--dp", "1", "--nodes", "2"});
    REQUIRE(tp.code == 0);
    CHECK_THAT(tp.out, Catch::Contains("placed on 2 nodes of 8 GPUs; warning: attention TP spans nodes"));
    const auto bad = kvplan_run(with({"--nodes", "3"}));
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err, Catch::Contains("--nodes 3: the layout's 16 GPUs do not split evenly over them"));
    const auto plain = kvplan_run({"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--nodes", "2"});
    CHECK(plain.code == 2);
    CHECK_THAT(plain.err, Catch::Contains("add --dp or --ep"));
}
