// `kvplan size` and `kvplan models` in process, through the same run() that main() calls.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/app.hpp"
#include "cli/version.hpp"
#include "io/presets.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

TEST_CASE("size --json has exactly the documented top-level keys, with units in their names") {
    auto r = kvplan_run({"size", "--model", "llama-3.1-8b", "--context", "8192", "--batch", "32", "--json"});
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    auto j = nlohmann::json::parse(r.out);
    std::vector<std::string> keys;
    for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
    std::sort(keys.begin(), keys.end());
    std::vector<std::string> expected = {"batch",
                                         "context_tokens",
                                         "formula_params",
                                         "formula_weights_bytes",
                                         "kv_bytes_per_gpu",
                                         "kv_bytes_per_sequence",
                                         "kv_bytes_per_token",
                                         "kv_bytes_total",
                                         "kv_dtype",
                                         "layer_groups",
                                         "model",
                                         "notes",
                                         "params",
                                         "stored_weights",
                                         "tp",
                                         "warnings",
                                         "weights_bytes",
                                         "weights_from"};
    CHECK(keys == expected);
    CHECK(j["model"] == "llama-3.1-8b");
    CHECK(j["kv_dtype"] == "bf16");
    CHECK(j["kv_bytes_per_token"] == 131072);
    CHECK(j["context_tokens"] == 8192);
    CHECK(j["kv_bytes_per_sequence"] == 1073741824);
    CHECK(j["kv_bytes_total"] == 34359738368LL);
    CHECK(j["params"] == 8030261248LL);
    CHECK(j["weights_bytes"] == 16060522496LL);
    CHECK(j["weights_from"] == "formula");  // a preset has no weights files
    CHECK(j["stored_weights"].is_null());
    REQUIRE(j["layer_groups"].size() == 1);
    auto g = j["layer_groups"][0];
    CHECK(g["kind"] == "full");
    CHECK(g["layers"] == 32);
    CHECK(g["window_tokens"].is_null());
    CHECK(g["bytes_per_token"] == 131072);
}

TEST_CASE("size --json for a sliding model lists each group with its window") {
    auto r = kvplan_run({"size", "--model", "gemma-2-9b", "--json", "--tp", "2", "--kv-dtype", "fp8"});
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["kv_dtype"] == "fp8");
    CHECK(j["kv_bytes_per_token"] == 172032);  // 2 x 42 x 8 x 256 x 1
    CHECK(j["layer_groups"][0]["window_tokens"] == 4096);
    CHECK(j["kv_bytes_per_gpu"] == j["kv_bytes_total"].get<std::int64_t>() / 2);
}

TEST_CASE("the human table shows exact bytes, binary units and the formula with numbers") {
    auto r = kvplan_run({"size", "--model", "llama-3.1-8b", "--context", "8192"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("131,072"));
    CHECK_THAT(r.out, Catch::Contains("128.00 KiB"));
    CHECK_THAT(r.out, Catch::Contains("1.00 GiB"));
    CHECK_THAT(r.out, Catch::Contains("2 (K,V) x 32 layers x 8 kv_heads x 128 head_dim x 2 bytes (bf16) = 131,072 B/token"));
    CHECK_THAT(r.out, Catch::Contains("8,030,261,248"));
}

TEST_CASE("the breakdown says cross-attention layers hold nothing per context token") {
    auto r = kvplan_run({"size", "--model", std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/configs/mllama-90b-vision.json", "--context", "4096"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("cross: 20 layers attend to the image encoder's tokens: 0 B per context token"));
}

TEST_CASE("a hand-built model needs no config: the seeds' 13B shape") {
    auto r = kvplan_run({"size", "--layers", "40", "--kv-heads", "40", "--head-dim", "128", "--context", "4096", "--json"});
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["kv_bytes_per_token"] == 819200);
    CHECK(j["kv_bytes_per_sequence"] == 3355443200LL);
}

TEST_CASE("csv output: one row per layer group and a total, raw integers") {
    auto r = kvplan_run({"size", "--model", "gemma-2-9b", "--context", "8192", "--format", "csv"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::StartsWith("model,kv_dtype,context_tokens,batch,tp,group,kind,layers,window_tokens,bytes_per_token,"));
    CHECK_THAT(r.out, Catch::Contains("gemma-2-9b,bf16,8192,1,1,0,sliding,21,4096,172032,4096,0,704643072,704643072"));
    CHECK_THAT(r.out, Catch::Contains("gemma-2-9b,bf16,8192,1,1,total,,42,,344064,,0,2113929216,2113929216"));
}

TEST_CASE("markdown output renders the same figures") {
    auto r = kvplan_run({"size", "--model", "qwen3-8b", "--context", "1000", "--format", "markdown"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("| KV per token | 147,456 | 144.00 KiB |"));
}

TEST_CASE("every subcommand's --help shows a working example") {
    for (const char* cmd : {"size", "concurrency", "roofline", "recommend", "measure", "models", "gpus", "check", "baseline", "diff"}) {
        auto r = kvplan_run({cmd, "--help"});
        CHECK(r.code == 0);
        CHECK_THAT(r.out, Catch::Contains("Example"));
        CHECK_THAT(r.out, Catch::Contains(std::string("kvplan ") + cmd));
    }
    auto top = kvplan_run({"--help"});
    CHECK(top.code == 0);
    CHECK_THAT(top.out, Catch::Contains("size"));
}

namespace {

// Runs `args` in process inside a new, empty folder, removed afterwards, so an
// example that needs a file an earlier example wrote (or one in the
// repository) fails here instead of working only after its neighbour.
int run_in_empty_folder(const std::vector<std::string>& args, int index) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("kvplan_help_example_" + std::to_string(::getpid()) + "_" + std::to_string(index));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path home = fs::current_path();
    fs::current_path(dir);
    const int code = kvplan_run(args).code;
    fs::current_path(home);
    fs::remove_all(dir);
    return code;
}

}  // namespace

// check, baseline and diff read and write files: their examples run in
// tests/cli/check_cmd_test.cpp, inside a scratch repository.
TEST_CASE("every example in every --help runs on its own in an empty folder and succeeds", "[slow]") {
    int index = 0;
    for (const char* cmd : {"size", "concurrency", "roofline", "recommend", "simulate", "measure", "models", "gpus"}) {
        std::istringstream help(kvplan_run({cmd, "--help"}).out);
        std::string line;
        int examples = 0;
        while (std::getline(help, line)) {
            if (line.rfind("  kvplan ", 0) != 0) continue;
            // An example may continue on the next line after a trailing backslash.
            for (std::string more; !line.empty() && line.back() == '\\' && std::getline(help, more);) line = line.substr(0, line.size() - 1) + more;
            line = line.substr(0, line.find('#'));  // drop the trailing comment
            std::istringstream words(line.substr(9));
            std::vector<std::string> args;
            for (std::string w; words >> w;) args.push_back(w);
            INFO(line);
            CHECK(run_in_empty_folder(args, ++index) == 0);
            ++examples;
        }
        CHECK(examples > 0);
    }
}

TEST_CASE("kvplan --version prints the version and the commit it was built from") {
    auto r = kvplan_run({"--version"});
    CHECK(r.code == 0);
    CHECK(r.out == version_line() + "\n");
    // One home for the version: project(VERSION) in CMakeLists.txt.
    CHECK(std::string(version()) == KVPLAN_PROJECT_VERSION);
    // A checkout's build names its commit: 12 hex digits, "-dirty" when edited.
    const std::string commit = build_commit();
    if (!commit.empty()) {
        CHECK(std::regex_match(commit, std::regex("[0-9a-f]{12}(-dirty)?")));
        CHECK(r.out == std::string("kvplan ") + KVPLAN_PROJECT_VERSION + " (commit " + commit + ")\n");
    } else {
        CHECK(r.out == std::string("kvplan ") + KVPLAN_PROJECT_VERSION + "\n");
    }
}

TEST_CASE("models lists every preset with its shape") {
    auto r = kvplan_run({"models", "--json"});
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j.size() == presets().size());
    CHECK(j[1]["name"] == "llama-3.1-8b");
    CHECK(j[1]["kv_bytes_per_token"] == 131072);
    auto text = kvplan_run({"models"});
    CHECK_THAT(text.out, Catch::Contains("21 sliding(4096) + 21 full"));
}

TEST_CASE("every preset sizes through the CLI") {
    for (const Preset& p : presets()) {
        INFO(p.name);
        auto r = kvplan_run({"size", "--model", p.name, "--context", "4096"});
        CHECK(r.code == 0);
        CHECK(r.err.empty());
    }
}

TEST_CASE("errors leave stdout empty and exit 2 or 65") {
    auto usage = kvplan_run({"size", "--model", "llama-3.1-8b", "--tp", "3"});
    CHECK(usage.code == 2);
    CHECK(usage.out.empty());
    CHECK_THAT(usage.err, Catch::StartsWith("kvplan: error: "));
    auto data = kvplan_run({"size", "--model", std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/constructed/README.md"});
    CHECK(data.code == 65);
    CHECK(data.out.empty());
}

TEST_CASE("token counts take vLLM's suffixes: k is 1,000 and K is 1,024") {
    // vllm/engine/arg_utils.py human_readable_int: '1k' -> 1,000, '1K' -> 1,024, '25.6k' -> 25,600.
    auto context_of = [](const std::string& text) {
        auto r = kvplan_run({"size", "--model", "llama-3.1-8b", "--context", text, "--json"});
        REQUIRE(r.code == 0);
        return nlohmann::json::parse(r.out)["context_tokens"].get<std::int64_t>();
    };
    CHECK(context_of("8k") == 8000);
    CHECK(context_of("8K") == 8192);
    CHECK(context_of("32K") == 32768);
    CHECK(context_of("25.6k") == 25600);
    CHECK(context_of("1m") == 1000000);
    CHECK(context_of("4096") == 4096);
    // Lists take them item by item.
    auto r = kvplan_run({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "4k,32K", "--json"});
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["contexts"][0]["context_tokens"] == 4000);
    CHECK(j["contexts"][1]["context_tokens"] == 32768);
}

TEST_CASE("output tokens are --output-tokens, and the old --output still works with a deprecation line") {
    auto now = kvplan_run({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--output-tokens", "64", "--json"});
    auto old = kvplan_run({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--output", "64", "--json"});
    REQUIRE(now.code == 0);
    REQUIRE(old.code == 0);
    CHECK(now.out == old.out);
    CHECK(now.err.empty());
    CHECK(old.err == "kvplan: warning: roofline --output N is deprecated and will name an output file; use --output-tokens N\n");
    auto rec = kvplan_run({"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "0.5", "--tpot", "0.05", "--output", "128"});
    CHECK(rec.err.find("recommend --output N is deprecated") != std::string::npos);
}

TEST_CASE("roofline --help does not offer --gpu-mem, which it refuses") {
    auto help = kvplan_run({"roofline", "--help"});
    CHECK(help.code == 0);
    CHECK(help.out.find("--gpu-mem") == std::string::npos);
    CHECK(help.out.find("--output-tokens") != std::string::npos);
    CHECK(kvplan_run({"concurrency", "--help"}).out.find("--gpu-mem") != std::string::npos);
}

namespace {

// A fresh folder under the system's temporary directory (left for inspection).
std::string fresh_dir(const std::string& name) {
    std::string templ = (std::filesystem::temp_directory_path() / ("kvplan_" + name + "_XXXXXX")).string();
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    return templ;
}

// A model folder: Llama's config.json from a preset and one more file beside it.
std::string folder_with(const std::string& name, const std::string& preset_file, const std::string& sidecar, const std::string& text) {
    const std::string dir = fresh_dir(name);
    std::filesystem::copy_file(std::string(KVPLAN_SOURCE_DIR) + "/models/presets/" + preset_file, dir + "/config.json");
    std::ofstream(dir + "/" + sidecar) << text;
    return dir;
}

std::int64_t weights_bytes(const std::string& model) {
    auto r = kvplan_run({"size", "--model", model, "--json"});
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out)["weights_bytes"].get<std::int64_t>();
}

}  // namespace

TEST_CASE("a ModelOpt NVFP4 folder's hf_quant_config.json sets the weights and the fp8 KV cache") {
    // ModelOpt <= 0.29 wrote its settings beside config.json; vLLM reads them
    // when config.json has none. Llama-3.1-8B in NVFP4, lm_head excluded, by hand:
    //   embeddings and lm_head bf16: 2 x 128,256 x 4,096 x 2 B = 2,101,346,304
    //   norms bf16: 266,240 x 2 B = 532,480
    //   linears: 6,979,321,856 params x (4 bits + an fp8 scale per 16) = x 0.5625 B
    //            = 3,925,868,544, plus a 4 B global scale per tensor (7 x 32) = 896
    //   total 6,027,748,224 B (about 6.0 GB; as bf16 the folder was sized 16.06 GB)
    const std::string dir = folder_with("nvfp4", "llama-3.1-8b.json", "hf_quant_config.json",
                                        R"({"producer": {"name": "modelopt", "version": "0.29.0"}, "quantization": {"quant_algo": "NVFP4",
                                            "kv_cache_quant_algo": "FP8", "group_size": 16, "exclude_modules": ["lm_head"]}})");
    CHECK(weights_bytes(dir) == 6'027'748'224);
    CHECK(weights_bytes("llama-3.1-8b") == 16'060'522'496);
    // kv_cache_quant_algo FP8: 32 x 8 x 128 x 2 x 1 B = 65,536 B per token, not bf16's 131,072.
    auto r = kvplan_run({"size", "--model", dir, "--json"});
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["kv_bytes_per_token"] == 65536);
    CHECK(r.out.find("quantization read from hf_quant_config.json beside config.json (modelopt, 4-bit weights)") != std::string::npos);
}

TEST_CASE("an old GPTQ folder's quantize_config.json sizes the weights as GPTQ") {
    // AutoGPTQ's quantize_config.json (bits 4, group 128, no quant_method). Per
    // 4,096 x 4,096 linear: qweight 8,388,608 + fp16 scales 32 x 4,096 x 2 = 262,144
    // + 4-bit zeros 65,536 + int32 g_idx 16,384 = 8,732,672 B; Llama-2-7B totals
    // 3,893,862,400 B (about 3.9 GB, as TheBloke/Llama-2-7B-GPTQ's model file; as
    // fp16 the folder was sized 13.48 GB).
    const std::string dir = folder_with("gptq", "llama-2-7b.json", "quantize_config.json",
                                        R"({"bits": 4, "group_size": 128, "damp_percent": 0.01, "desc_act": false, "sym": true})");
    CHECK(weights_bytes(dir) == 3'893'862'400);
    auto r = kvplan_run({"size", "--model", dir, "--wide"});                             // --wide: the note on one line, unwrapped
    CHECK(r.out.find("attention   2,147,483,648  1,117,782,016") != std::string::npos);  // 128 linears x 8,732,672
    CHECK(r.out.find("vLLM reads it when served with --quantization gptq") != std::string::npos);
}
