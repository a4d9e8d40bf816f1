// The default max_model_len as vLLM derives it (vllm/config/model.py,
// _get_and_verify_max_len): the smallest length key, the tokenizer's limit,
// then RoPE scaling. Each case's expected length is the rule worked by hand.
#include "core/model/max_len.hpp"

#include <catch2/catch.hpp>

#include "core/config_reader.hpp"
#include "core/error.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

DerivedMaxLen derive(const std::string& json, const std::string& type = "qwen2", std::optional<std::int64_t> tokenizer = std::nullopt) {
    const nlohmann::json config = nlohmann::json::parse(json);
    return derive_max_model_len(ConfigReader(config, "c.json"), type, tokenizer);
}

}  // namespace

TEST_CASE("YaRN scales original_max_position_embeddings by its factor") {
    // Qwen2.5's model card: add {"type": "yarn", "factor": 4.0,
    // "original_max_position_embeddings": 32768} for 131,072 tokens.
    const auto d = derive(R"({"max_position_embeddings": 32768,
        "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}})");
    CHECK(d.tokens == 131072);
    CHECK(d.note.find("RoPE scaling factor 4 x original_max_position_embeddings 32,768") != std::string::npos);
    // DeepSeek-V3's config: yarn, factor 40 x 4,096 = 163,840 (its max_position_embeddings).
    CHECK(preset("deepseek-v3").max_position_tokens == 163840);
}

TEST_CASE("linear and dynamic scaling multiply the config's length, llama3 and longrope do not") {
    CHECK(derive(R"({"max_position_embeddings": 4096, "rope_scaling": {"rope_type": "linear", "factor": 2.0}})").tokens == 8192);
    CHECK(derive(R"({"max_position_embeddings": 4096, "rope_scaling": {"type": "dynamic", "factor": 1.5}})").tokens == 6144);
    // transformers v5 names it rope_parameters.
    CHECK(derive(R"({"max_position_embeddings": 4096, "rope_parameters": {"rope_type": "linear", "factor": 3}})").tokens == 12288);
    // Llama-3.1's own llama3 scaling is already in its 131,072.
    CHECK(preset("llama-3.1-8b").max_position_tokens == 131072);
    // A null factor is read as 1.0, as vLLM falls back.
    CHECK(derive(R"({"max_position_embeddings": 4096, "rope_scaling": {"rope_type": "default", "factor": null}})").tokens == 4096);
}

TEST_CASE("Gemma-3's max_position_embeddings is already scaled: its linear factor 8 is not applied") {
    const std::string cfg = R"({"max_position_embeddings": 131072, "rope_scaling": {"rope_type": "linear", "factor": 8.0}})";
    CHECK(derive(cfg, "gemma3_text").tokens == 131072);
    CHECK(derive(cfg, "llama").tokens == 1048576);
}

TEST_CASE("LongRoPE defaults to original_max_position_embeddings") {
    // Phi-3-mini-128k-instruct: max_position_embeddings 131,072, original 4,096, longrope.
    const auto d = derive(R"({"max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
        "rope_scaling": {"type": "longrope", "long_factor": [1.0], "short_factor": [1.0]}})",
                          "phi3");
    CHECK(d.tokens == 4096);
    CHECK(d.note.find("LongRoPE") != std::string::npos);
}

TEST_CASE("the smallest length key wins, model_max_length outright, and the tokenizer caps it") {
    CHECK(derive(R"({"max_position_embeddings": 8192, "seq_length": 4096})").tokens == 4096);
    CHECK(derive(R"({"max_position_embeddings": 8192, "model_max_length": 131072})").tokens == 131072);  // Command-R
    const auto t = derive(R"({"max_position_embeddings": 32768})", "qwen2", 16384);
    CHECK(t.tokens == 16384);
    CHECK(t.note.find("tokenizer_config.json's model_max_length") != std::string::npos);
    CHECK(derive(R"({"n_ctx": 2048})").tokens == 2048);  // not vLLM's key: used only when none of its keys is there
}

TEST_CASE("a YaRN setting without original_max_position_embeddings, or an absurd factor, names the field") {
    CHECK_THROWS_WITH(derive(R"({"max_position_embeddings": 4096, "rope_scaling": {"type": "yarn", "factor": 4.0}})"),
                      Catch::Contains("c.json: rope_scaling.original_max_position_embeddings: missing"));
    CHECK_THROWS_WITH(derive(R"({"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 1e9}})"),
                      Catch::Contains("rope_scaling.factor: expected a number in (0, 1e6]"));
    CHECK_THROWS_WITH(derive(R"({"max_position_embeddings": 1000000, "rope_scaling": {"type": "linear", "factor": 5000}})"),
                      Catch::Contains("scales the length to 5,000,000,000 tokens"));
}
