// KV bytes per token checked against what real engines logged at start-up
// (../shared/reference/engine_logs.jsonl; each case quotes its row id and
// log line). An engine's pool divided by its token count is the engine's own
// bytes per token; kvplan must agree with it.
#include <cmath>

#include <catch2/catch.hpp>

#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Rounds bytes to GiB with two decimals, as the engines print them.
double gib2(std::int64_t bytes) {
    return std::round(bytes / kGiB * 100.0) / 100.0;
}

}  // namespace

TEST_CASE("vLLM #10517: Llama-3.1-8B, 1952 blocks of 16 tokens are kv_cache_size=3.81GiB") {
    // "GPU blocks: 1952" and "kv_cache_size=3.81GiB" (RTX 3090, max_model_len 20000).
    auto per_token = bytes_per_token("llama-3.1-8b");
    CHECK(gib2(1952LL * 16 * per_token) == 3.81);
    // Same thread, max_model_len 29000: "# GPU blocks: 1478", "kv_cache_size=2.89GiB".
    CHECK(gib2(1478LL * 16 * per_token) == 2.89);
}

TEST_CASE("TensorRT-LLM #1400: a 7B Llama-2 shape's pool of 69,524,783,104 bytes holds 132,608 tokens") {
    // "... 69524783104 bytes ..." for "max tokens in paged KV cache (132608)": exactly 524,288 B/token.
    CHECK(69'524'783'104LL / 132'608 == bytes_per_token("llama-2-7b"));
    CHECK(69'524'783'104LL % 132'608 == 0);
}

TEST_CASE("TensorRT-LLM #1188: Qwen2.5-0.5B, 4.53 GiB for 395,776 tokens") {
    // "Allocated 4.53 GiB for max tokens in paged KV cache (395776)." Qwen2.5-0.5B's published
    // shape: 24 layers, 14 heads, 2 KV heads, hidden 896 (head_dim 64): 12,288 B/token in fp16.
    auto m = from_json(R"({"model_type": "qwen2", "num_hidden_layers": 24, "hidden_size": 896,
        "num_attention_heads": 14, "num_key_value_heads": 2, "intermediate_size": 4864,
        "vocab_size": 151936, "tie_word_embeddings": true, "torch_dtype": "bfloat16"})");
    auto s = kv(m, 1, 1, 1, Dtype::Fp16);
    CHECK(s.bytes_per_token == 12'288);
    CHECK(gib2(395'776LL * s.bytes_per_token) == 4.53);
}

TEST_CASE("SGLang (vLLM #21348): Qwen3-235B-A22B at TP 4 holds 367,404 tokens in 8.23 GiB of K per GPU") {
    // "KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB" (SGLang's GB is GiB).
    // Qwen3-235B-A22B's published shape: 94 layers, 64 heads, 4 KV heads, head_dim 128.
    // At TP 4 each GPU holds one KV head: 94 x 1 x 128 x 2 B = 24,064 B of K per token.
    auto m = from_json(R"({"model_type": "qwen3_moe", "num_hidden_layers": 94, "hidden_size": 4096,
        "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 12288,
        "moe_intermediate_size": 1536, "num_experts": 128, "num_experts_per_tok": 8,
        "vocab_size": 151936, "torch_dtype": "bfloat16"})");
    auto s = kv(m, 367'404, 1, 4);
    CHECK(s.bytes_per_gpu / 2 == 367'404LL * 24'064);
    CHECK(gib2(s.bytes_per_gpu / 2) == 8.23);
}

TEST_CASE("vLLM #5248: deepseek-coder-6.7b at TP 2 is 256 KiB per token per GPU (4 MiB per 16-token block)") {
    // "# CPU blocks: 1024" at the default swap_space of 4 GiB per GPU: 4 GiB / 1024 = 4 MiB per block.
    // deepseek-coder-6.7b is Llama-shaped multi-head attention: 32 layers, 32 heads, 4096 hidden.
    auto m = from_json(R"({"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
        "num_attention_heads": 32, "intermediate_size": 11008, "vocab_size": 32256, "torch_dtype": "bfloat16"})");
    auto s = kv(m, 16, 1, 2, Dtype::Fp16);
    CHECK(s.bytes_per_gpu == 4LL << 20);
    CHECK((4LL << 30) / s.bytes_per_gpu == 1024);
}
