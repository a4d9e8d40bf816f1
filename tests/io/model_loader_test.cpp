// --model resolution: file, folder, preset; and JSON errors with line and column.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "io/model_loader.hpp"
#include "io/presets.hpp"

using namespace kvplan;
namespace fs = std::filesystem;

TEST_CASE("every bundled preset is embedded, listed in the index and parses") {
    CHECK(presets().size() == 15);
    for (const char* name : {"llama-2-7b", "llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "qwen2.5-7b", "qwen3-8b",
                             "gemma-2-9b", "gemma-3-1b", "phi-4", "falcon-7b", "deepseek-v3", "gpt-oss-120b", "gpt2",
                             "gpt-j-6b", "mamba-2.8b"}) {
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
    fs::path dir = fs::temp_directory_path() / "kvplan_loader_test_folder";
    fs::create_directories(dir);
    fs::copy_file(std::string(KVPLAN_SOURCE_DIR) + "/models/presets/qwen3-8b.json", dir / "config.json",
                  fs::copy_options::overwrite_existing);
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
