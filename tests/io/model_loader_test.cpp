// --model resolution: file, folder, preset; and JSON errors with line and column.
#include "io/model_loader.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "io/presets.hpp"
#include "io/sha256.hpp"
#include "test_support.hpp"

using namespace kvplan;
namespace fs = std::filesystem;

TEST_CASE("every bundled preset is embedded, listed in the index and parses") {
    CHECK(presets().size() == 15);
    for (const char* name : {"llama-2-7b", "llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "qwen2.5-7b", "qwen3-8b", "gemma-2-9b", "gemma-3-1b",
                             "phi-4", "falcon-7b", "deepseek-v3", "gpt-oss-120b", "gpt2", "gpt-j-6b", "mamba-2.8b"}) {
        INFO(name);
        REQUIRE(find_preset(name));
        CHECK_NOTHROW(load_model(name));
    }
    CHECK(find_preset("LLAMA-3.1-8B"));  // case-insensitive
}

TEST_CASE("a bundled preset is byte for byte the reference config") {
    std::ifstream in(std::string(KVPLAN_SOURCE_DIR) + "/models/presets/llama-3.1-8b.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(find_preset("llama-3.1-8b")->config_text == text);
}

TEST_CASE("a model folder resolves to its config.json") {
    fs::path dir = fs::temp_directory_path() / ("kvplan_loader_test_folder_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    fs::copy_file(std::string(KVPLAN_SOURCE_DIR) + "/models/presets/qwen3-8b.json", dir / "config.json", fs::copy_options::overwrite_existing);
    auto m = load_model(dir.string());
    CHECK(m.model_type == "qwen3");
    CHECK(m.name == (dir / "config.json").string());
    fs::remove_all(dir);
}

TEST_CASE("unknown names are usage errors that list the presets") {
    try {
        load_model("llama-9");
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Usage);
        CHECK_THAT(e.what(), Catch::Contains("llama-3.1-8b"));
    }
}

TEST_CASE("malformed JSON reports line and column") {
    CHECK_THROWS_WITH(parse_json_text("{\n  \"a\": 1,\n}", "x.json"), Catch::StartsWith("x.json:3:1: not valid JSON"));
    CHECK_THROWS_WITH(parse_json_text("   \n", "x.json"), Catch::Contains("file is empty"));
}

namespace {

// A Hugging Face cache laid out as huggingface_hub writes it, under a scratch HF_HUB_CACHE.
struct HfCache {
    // One folder per process: ctest runs test cases in parallel processes.
    fs::path root = fs::temp_directory_path() / ("kvplan_hf_cache_test_" + std::to_string(::getpid()));
    HfCache() {
        fs::remove_all(root);
        ::setenv("HF_HUB_CACHE", root.c_str(), 1);
    }
    ~HfCache() {
        ::unsetenv("HF_HUB_CACHE");
        fs::remove_all(root);
    }
    void snapshot(const std::string& folder, const std::string& revision, const std::string& preset_file) {
        fs::path dir = root / folder / "snapshots" / revision;
        fs::create_directories(dir);
        fs::copy_file(std::string(KVPLAN_SOURCE_DIR) + "/models/presets/" + preset_file, dir / "config.json");
    }
};

}  // namespace

TEST_CASE("a Hugging Face repo id resolves through the local HF cache and follows refs/main") {
    HfCache cache;
    cache.snapshot("models--acme--tiny", "aaaa", "qwen3-8b.json");
    cache.snapshot("models--acme--tiny", "bbbb", "gemma-2-9b.json");
    fs::create_directories(cache.root / "models--acme--tiny" / "refs");
    std::ofstream(cache.root / "models--acme--tiny" / "refs" / "main") << "bbbb";
    auto m = load_model("acme/tiny");
    CHECK(m.model_type == "gemma2");
    CHECK(m.name == "acme/tiny");
    CHECK_THAT(m.source.path, Catch::EndsWith("snapshots/bbbb/config.json"));
    // The cache entry's folder works as a --model path too.
    CHECK(load_model((cache.root / "models--acme--tiny").string()).model_type == "gemma2");
}

TEST_CASE("a cache entry with several snapshots and no refs/main asks which one") {
    HfCache cache;
    cache.snapshot("models--acme--two", "aaaa", "qwen3-8b.json");
    cache.snapshot("models--acme--two", "bbbb", "gemma-2-9b.json");
    CHECK_THROWS_WITH(load_model("acme/two"), Catch::Contains("2 snapshots and no refs/main"));
    cache.snapshot("models--acme--one", "cccc", "qwen3-8b.json");
    CHECK(load_model("acme/one").model_type == "qwen3");
}

TEST_CASE("a preset's Hugging Face repo id finds the preset when the model is not cached") {
    HfCache cache;
    auto m = load_model("meta-llama/Llama-3.1-8B-Instruct");
    CHECK(m.name == "llama-3.1-8b");
}

TEST_CASE("an org/name that is neither cached nor a preset says how to fetch its config") {
    HfCache cache;
    CHECK_THROWS_WITH(load_model("acme/not-here"),
                      Catch::Contains("acme/not-here: not in the local Hugging Face cache and not a bundled preset: fetch its config with "
                                      "`hf download acme/not-here config.json`"));
    // A name without an org, or a relative path, keeps the plain message.
    CHECK_THROWS_WITH(load_model("not-here"), Catch::Contains("no such file, folder, cached Hugging Face model or bundled preset"));
    CHECK_THROWS_WITH(load_model("./acme/x"), Catch::Contains("no such file, folder, cached Hugging Face model or bundled preset"));
}

TEST_CASE("served_model names what the engines load: the preset's Hugging Face id, a repo id, a folder") {
    HfCache cache;
    CHECK(served_model("llama-3.1-8b").id == "meta-llama/Llama-3.1-8B-Instruct");
    CHECK(served_model("META-LLAMA/llama-3.1-8b-instruct").id == "meta-llama/Llama-3.1-8B-Instruct");
    cache.snapshot("models--acme--tiny", "aaaa", "qwen3-8b.json");
    CHECK(served_model("acme/tiny").id == "acme/tiny");
    // A cache entry given as a path: its snapshot folder, which holds the weights.
    CHECK_THAT(served_model((cache.root / "models--acme--tiny").string()).id, Catch::EndsWith("snapshots/aaaa"));
    const fs::path dir = cache.root / "plain";
    fs::create_directories(dir);
    fs::copy_file(std::string(KVPLAN_SOURCE_DIR) + "/models/presets/qwen3-8b.json", dir / "config.json");
    const ServedModel folder = served_model(dir.string());
    CHECK(folder.id == dir.string());
    CHECK_FALSE(folder.quantization_beside_config);
    CHECK(folder.warning.empty());
    CHECK(served_model((dir / "config.json").string()).id == dir.string());
}

TEST_CASE("served_model says when GPTQ settings sit beside config.json, which vLLM reads only when told the method") {
    HfCache cache;
    const fs::path dir = cache.root / "gptq";
    fs::create_directories(dir);
    fs::copy_file(std::string(KVPLAN_SOURCE_DIR) + "/models/presets/qwen3-8b.json", dir / "config.json");
    std::ofstream(dir / "quantize_config.json") << R"({"bits": 4, "group_size": 128, "desc_act": false})";
    CHECK(served_model(dir.string()).quantization_beside_config);
    // A config file under another name: its folder is printed, with a warning.
    fs::copy_file(dir / "config.json", dir / "other.json");
    CHECK_THAT(served_model((dir / "other.json").string()).warning, Catch::Contains("is not named config.json"));
}

TEST_CASE("a model from the HF cache is named by its repo id, and its source records the revision, the ref and the config hash") {
    HfCache cache;
    const std::string rev = "0e9e39f249a16976918f6564b8830bc894c89659";
    cache.snapshot("models--acme--tiny", rev, "qwen3-8b.json");
    fs::create_directories(cache.root / "models--acme--tiny" / "refs");
    std::ofstream(cache.root / "models--acme--tiny" / "refs" / "main") << rev << "\n";
    const ModelSpec m = load_model("acme/tiny");
    CHECK(m.name == "acme/tiny");
    CHECK(m.source.kind == ModelSourceKind::HfCache);
    CHECK(m.source.repo_id == "acme/tiny");
    CHECK(m.source.revision == rev);
    CHECK(m.source.ref == "main");
    const std::string config = (cache.root / "models--acme--tiny" / "snapshots" / rev / "config.json").string();
    CHECK(m.source.path == config);
    std::ifstream in(config, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(m.source.config_sha256 == sha256_hex(bytes));
    // Headings and JSON name the repo id and the 12-character revision, not the snapshot path.
    const auto text = test::kvplan_run({"size", "--model", "acme/tiny"});
    REQUIRE(text.code == 0);
    CHECK(text.out.rfind("kvplan size: acme/tiny@0e9e39f249a1 (HF cache, qwen3)\n", 0) == 0);
    CHECK(text.out.find("snapshots") == std::string::npos);
    const auto json = nlohmann::json::parse(test::kvplan_run({"concurrency", "--model", "acme/tiny", "--gpu", "h100", "--json"}).out);
    CHECK(json["model"] == "acme/tiny");
    // The entry folder given as a path is a folder, with the cache's repo id and revision recorded.
    const ModelSpec folder = load_model((cache.root / "models--acme--tiny").string());
    CHECK(folder.source.kind == ModelSourceKind::Folder);
    CHECK(folder.source.repo_id == "acme/tiny");
    CHECK(folder.source.revision == rev);
}

TEST_CASE("a lowercase repo id that matches a cached repo ignoring case uses the cache, not the preset") {
    HfCache cache;
    // Qwen3-8B's config under Llama's repo id: the figures tell which one was read.
    cache.snapshot("models--meta-llama--Llama-3.1-8B-Instruct", "abcd", "qwen3-8b.json");
    const ModelSpec m = load_model("meta-llama/llama-3.1-8b-instruct");
    CHECK(m.model_type == "qwen3");
    CHECK(m.source.kind == ModelSourceKind::HfCache);
    CHECK(m.name == "meta-llama/Llama-3.1-8B-Instruct");
    CHECK(m.source.revision == "abcd");
    CHECK(m.source.ref.empty());  // no refs/main: the only snapshot
    // The engines are told the cache's spelling, which finds the same folder.
    CHECK(served_model("meta-llama/llama-3.1-8b-instruct").id == "meta-llama/Llama-3.1-8B-Instruct");
    // Two entries that differ only in case: ask which.
    cache.snapshot("models--acme--Dup", "aaaa", "qwen3-8b.json");
    cache.snapshot("models--acme--dUP", "bbbb", "qwen3-8b.json");
    CHECK_THROWS_WITH(load_model("acme/dup"), Catch::Contains("differ only in case"));
    CHECK(load_model("acme/Dup").source.revision == "aaaa");
}

TEST_CASE("a preset records its source, its repo id and the SHA-256 of its config as shipped") {
    const ModelSpec m = load_model("llama-3.1-8b");
    CHECK(m.source.kind == ModelSourceKind::Preset);
    CHECK(m.source.repo_id == "meta-llama/Llama-3.1-8B-Instruct");
    CHECK(m.source.path.empty());
    // `sha256sum models/presets/llama-3.1-8b.json`: the embedded text is the file byte for byte.
    CHECK(m.source.config_sha256 == "8883952a0146d6ef3c58345acba733eff932db7b7a21c42c60180ec49ba18483");
    const ModelSpec file = load_model(std::string(KVPLAN_SOURCE_DIR) + "/models/presets/llama-3.1-8b.json");
    CHECK(file.source.kind == ModelSourceKind::File);
    CHECK(file.source.config_sha256 == m.source.config_sha256);
    CHECK(file.source.repo_id.empty());
}
