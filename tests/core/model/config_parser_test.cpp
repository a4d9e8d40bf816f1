// The config parser: key-name families, nested text_config, per-layer kinds
// from the family rules, and errors that name the field. Real configs come
// from tests/fixtures/configs/ (SOURCES.md there says where each is from).
#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

std::int64_t count_kind(const ModelSpec& m, LayerKind kind) {
    return std::count_if(m.layers.begin(), m.layers.end(), [&](const LayerSpec& l) { return l.kind == kind; });
}

}  // namespace

TEST_CASE("GPT-2's n_layer / n_embd / n_head key family") {
    auto m = preset("gpt2");
    CHECK(m.layers.size() == 12);
    CHECK(m.hidden == 768);
    CHECK(m.heads == 12);
    CHECK(m.head_dim == 64);  // 768 / 12
    CHECK(m.layers[0].kv_heads == 12);
    CHECK(m.tied_embeddings);  // PretrainedConfig default: tie_word_embeddings = true
}

TEST_CASE("ChatGLM3's num_layers / multi_query_group_num / kv_channels") {
    auto m = fixture("configs/chatglm3-6b.json");
    CHECK(m.layers.size() == 28);
    CHECK(m.layers[0].kv_heads == 2);        // multi_query_group_num
    CHECK(m.layers[0].k_head_dim == 128);    // kv_channels
    CHECK(kv(m).bytes_per_token == 28'672);  // 2 x 28 x 2 x 128 x 2
}

TEST_CASE("GPT-BigCode's multi_query flag means one KV head") {
    auto m = fixture("configs/starcoder-gpt-bigcode.json");
    CHECK(m.layers[0].kv_heads == 1);
    CHECK(kv(m).bytes_per_token == 2 * 24 * 1 * 128 * 2);  // santacoder: 24 layers, 2048/16 = 128
}

TEST_CASE("Falcon: multi_query on the old layout, num_kv_heads on the new") {
    CHECK(preset("falcon-7b").layers[0].kv_heads == 1);
    auto m = fixture("constructed/falcon-40b.json");
    CHECK(m.layers[0].kv_heads == 8);
    CHECK(kv(m).bytes_per_token == 122'880);  // 2 x 60 x 8 x 64 x 2 (8192 / 128 = 64)
}

TEST_CASE("an explicit head_dim wins over hidden / heads (Mistral-Nemo: 128, not 5120/32 = 160)") {
    auto m = fixture("configs/mistral-nemo.json");
    CHECK(m.head_dim == 128);
    CHECK(kv(m).bytes_per_token == 163'840);  // 2 x 40 x 8 x 128 x 2
}

TEST_CASE("nested text_config: Llava-1.5 sizes its Llama language model, filling class defaults") {
    // llava-1.5-7b's text_config gives no hidden_size or layer count: transformers' LlamaConfig
    // defaults (4096, 32 layers, 32 heads) apply, as when transformers loads it.
    auto m = fixture("configs/llava-1.5-7b.json");
    CHECK(m.model_type == "llama");
    CHECK(m.layers.size() == 32);
    CHECK(m.vocab == 32064);
    CHECK(kv(m).bytes_per_token == 524'288);  // 2 x 32 x 32 x 128 x 2
    bool noted = false;
    for (const auto& n : m.notes) noted |= n.find("text_config.hidden_size missing") != std::string::npos;
    CHECK(noted);
}

TEST_CASE("nested text_config: Gemma-3-4B multimodal uses Gemma3TextConfig defaults and its own window") {
    // 34 layers; defaults 4 KV heads x 256 head_dim; sliding_window 1024 from the file;
    // pattern 6: layers 5, 11, 17, 23, 29 full.
    auto m = fixture("configs/gemma-3-4b-it.json");
    CHECK(count_kind(m, LayerKind::Sliding) == 29);
    CHECK(count_kind(m, LayerKind::Full) == 5);
    CHECK(m.layers[0].window_tokens == 1024);
    CHECK(kv(m).bytes_per_token == 139'264);  // 2 x 34 x 4 x 256 x 2
    // "Gemma 3 4B (text) | 3,880,263,168" (public parameter table, index id 70113386272).
    CHECK(size_weights(m).params == 3'880'263'168);
}

TEST_CASE("Mistral-7B-v0.1 and Phi-3-mini: a non-null sliding_window makes every layer sliding") {
    auto mistral = fixture("configs/mistral-7b-v0.1.json");
    CHECK(count_kind(mistral, LayerKind::Sliding) == 32);
    CHECK(kv(mistral, 32768).bytes_per_sequence == 131'072LL * 4096);
    auto phi3 = fixture("configs/phi-3-mini-4k.json");
    CHECK(count_kind(phi3, LayerKind::Sliding) == 32);
    CHECK(phi3.layers[0].window_tokens == 2047);
    auto starcoder2 = fixture("configs/starcoder2-7b.json");
    CHECK(count_kind(starcoder2, LayerKind::Sliding) == 32);
    // Mixtral and phi-4 write sliding_window null: full attention.
    CHECK(count_kind(preset("mixtral-8x7b"), LayerKind::Full) == 32);
    CHECK(count_kind(preset("phi-4"), LayerKind::Full) == 40);
}

TEST_CASE("Qwen2: sliding only with use_sliding_window, and only from max_window_layers on") {
    CHECK(count_kind(preset("qwen2.5-7b"), LayerKind::Full) == 28);  // use_sliding_window false
    auto m = fixture("constructed/qwen2-sliding.json");              // true, max_window_layers 21
    CHECK(count_kind(m, LayerKind::Full) == 21);
    CHECK(count_kind(m, LayerKind::Sliding) == 7);
    CHECK(m.layers[21].kind == LayerKind::Sliding);
}

TEST_CASE("Cohere-2: sliding_window_pattern 4 makes every fourth layer full") {
    auto m = fixture("constructed/cohere2.json");
    CHECK(count_kind(m, LayerKind::Full) == 8);
    CHECK(m.layers[3].kind == LayerKind::Full);
    CHECK(m.layers[0].kind == LayerKind::Sliding);
}

TEST_CASE("gpt-oss: layer_types decides each layer") {
    auto m = preset("gpt-oss-120b");
    CHECK(m.layers[0].kind == LayerKind::Sliding);
    CHECK(m.layers[0].window_tokens == 128);
    CHECK(m.layers[1].kind == LayerKind::Full);
}

TEST_CASE("Llama-4 Scout: chunked attention except every fourth (NoPE) layer") {
    // attention_chunk_size 8192; no no_rope_layers in the file: default interval 4 -> layers 3, 7, ... full.
    auto m = fixture("configs/llama4-scout.json");
    CHECK(m.layers.size() == 48);
    CHECK(count_kind(m, LayerKind::Chunked) == 36);
    CHECK(count_kind(m, LayerKind::Full) == 12);
    CHECK(m.layers[3].kind == LayerKind::Full);
    CHECK(m.layers[0].window_tokens == 8192);
    // 2 x 8 x 128 x 2 = 4,096 B per layer per token. At 100,000 tokens:
    // 36 x 4,096 x 8,192 + 12 x 4,096 x 100,000.
    CHECK(kv(m, 100000).bytes_per_sequence == 36LL * 4096 * 8192 + 12LL * 4096 * 100000);
}

TEST_CASE("mllama: cross-attention layers add nothing per context token") {
    // Llama-3.2-90B-Vision: 100 text layers, 20 of them cross-attention.
    auto m = fixture("configs/mllama-90b-vision.json");
    CHECK(count_kind(m, LayerKind::Cross) == 20);
    auto s = kv(m, 1000);
    CHECK(s.bytes_per_token == 80 * 2 * 8 * 128 * 2);  // only the 80 self-attention layers
    CHECK(s.groups.back().spec.kind == LayerKind::Cross);
    CHECK(s.groups.back().bytes_per_sequence == 0);
}

TEST_CASE("MLA: DeepSeek-V3, DeepSeek-V2-Lite and Kimi-K2 cache kv_lora_rank + qk_rope_head_dim") {
    CHECK(kv(preset("deepseek-v3")).bytes_per_token == 61 * 576 * 2);
    CHECK(kv(fixture("configs/deepseek-v2-lite.json")).bytes_per_token == 27 * 576 * 2);  // 31,104
    CHECK(kv(fixture("configs/kimi-k2.json")).bytes_per_token == 61 * 576 * 2);
    // DeepSeek-V2-Lite has no q_lora_rank: a plain q_proj.
    auto lite = fixture("configs/deepseek-v2-lite.json");
    // Published: "deepseek-ai/DeepSeek-V2-Lite | base | 15706484224" (public table, index id 69468411049).
    CHECK(size_weights(lite).params == 15'706'484'224);
    // Kimi-K2-Instruct: "Language model parameters | 1,026,408,232,448" (public model note, index id
    // 54841332681), including 60 MoE layers x 384 fp32 routing biases (the fixture omits topk_method;
    // DeepSeek-V3-architecture routers always carry e_score_correction_bias).
    CHECK(size_weights(fixture("configs/kimi-k2.json")).params == 1'026'408'232'448);
}

TEST_CASE("the dtype key: torch_dtype, or dtype in newer configs") {
    auto m = from_json(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
                           "num_attention_heads": 4, "vocab_size": 10, "dtype": "bfloat16"})");
    CHECK(m.checkpoint_dtype == Dtype::Bf16);
}

TEST_CASE("errors name the file and the field") {
    SECTION("kv heads that do not divide the heads") {
        CHECK_THROWS_WITH(from_json(R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                                        "num_key_value_heads": 3, "vocab_size": 10})"),
                          Catch::Contains("inline.json: num_key_value_heads (3) must divide num_attention_heads (4)"));
    }
    SECTION("layer_types of the wrong length") {
        CHECK_THROWS_WITH(from_json(R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                                        "vocab_size": 10, "layer_types": ["full_attention"]})"),
                          Catch::Contains("layer_types: has 1 entries but the model has 2 layers"));
    }
    SECTION("a negative window") {
        CHECK_THROWS_WITH(from_json(R"({"model_type": "mistral", "num_hidden_layers": 2, "hidden_size": 64,
                                        "num_attention_heads": 4, "vocab_size": 10, "sliding_window": -5})"),
                          Catch::Contains("sliding_window: expected an integer in [1, 1000000000], found -5"));
    }
    SECTION("a missing required field") {
        CHECK_THROWS_WITH(from_json(R"({"hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10})"),
                          Catch::Contains("inline.json: num_hidden_layers: required field is missing (expected an integer in [1, 10000]; "
                                          "also accepted as n_layer, num_layers, n_layers, num_transformer_layers)"));
    }
    SECTION("a nested field names its path") {
        CHECK_THROWS_WITH(from_json(R"({"text_config": {"model_type": "qwen2", "num_hidden_layers": "two",
                                        "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10}})"),
                          Catch::Contains("text_config.num_hidden_layers: expected an integer, found a string"));
    }
    SECTION("errors are data errors") {
        try {
            from_json(R"({"hidden_size": 64})");
            FAIL("no error");
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::Data);
        }
    }
}
