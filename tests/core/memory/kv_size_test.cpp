// KV bytes per token for every real config in ../shared/reference/configs/
// (bundled as presets), each derived by hand in the comment, plus
// per-sequence, batch and tensor-parallel behaviour.
#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

TEST_CASE("every bundled preset's KV bytes per token matches the hand-derived figure") {
    // bytes/token = sum over per-token layers of 2 (K,V) x kv_heads x head_dim x bytes (auto dtype:
    // bf16 stays bf16, float16/float32/missing -> fp16; all 2 bytes).
    CHECK(bytes_per_token("llama-2-7b") == 524'288);     // 2 x 32 layers x 32 kv x 128 x 2
    CHECK(bytes_per_token("llama-3.1-8b") == 131'072);   // 2 x 32 x 8 x 128 x 2
    CHECK(bytes_per_token("llama-3.1-70b") == 327'680);  // 2 x 80 x 8 x 128 x 2
    CHECK(bytes_per_token("mixtral-8x7b") == 131'072);   // 2 x 32 x 8 x 128 x 2 (sliding_window null: full)
    CHECK(bytes_per_token("qwen2.5-7b") == 57'344);      // 2 x 28 x 4 x 128 x 2 (3584/28 = 128; use_sliding_window false)
    CHECK(bytes_per_token("qwen3-8b") == 147'456);       // 2 x 36 x 8 x 128 x 2 (explicit head_dim 128)
    CHECK(bytes_per_token("gemma-2-9b") == 344'064);     // 2 x 42 x 8 x 256 x 2 (head_dim 256, not 3584/16 = 224)
    CHECK(bytes_per_token("gemma-3-1b") == 26'624);      // 2 x 26 x 1 x 256 x 2 (MQA)
    CHECK(bytes_per_token("phi-4") == 204'800);          // 2 x 40 x 10 x 128 x 2
    CHECK(bytes_per_token("falcon-7b") == 8'192);        // 2 x 32 x 1 x 64 x 2 (multi_query; 4544/71 = 64)
    CHECK(bytes_per_token("deepseek-v3") == 70'272);     // 61 x (512 + 64) x 2, MLA: no factor 2
    CHECK(bytes_per_token("gpt-oss-120b") == 73'728);    // 2 x 36 x 8 x 64 x 2
    CHECK(bytes_per_token("gpt2") == 36'864);            // 2 x 12 x 12 x 64 x 2 (float32 config -> fp16)
    CHECK(bytes_per_token("gpt-j-6b") == 458'752);       // 2 x 28 x 16 x 256 x 2 (no torch_dtype -> fp16)
    CHECK(bytes_per_token("mamba-2.8b") == 0);           // no per-token state at all
}

TEST_CASE("Llama-3.1-8B bf16 at 8,192 tokens, batch 32 is 1 GiB per sequence and 32 GiB in all") {
    auto s = kv(preset("llama-3.1-8b"), 8192, 32);
    CHECK(s.kv_dtype == Dtype::Bf16);
    CHECK(s.bytes_per_sequence == 131'072LL * 8192);  // 1,073,741,824 = 1 GiB
    CHECK(s.bytes_total == 32LL << 30);
    CHECK(s.bytes_per_gpu == s.bytes_total);
}

TEST_CASE("the default context is max_position_embeddings") {
    KvOptions o;
    auto s = size_kv(preset("llama-3.1-8b"), o);
    REQUIRE(s.context_tokens);
    CHECK(*s.context_tokens == 131'072);
    CHECK(s.bytes_per_sequence == 131'072LL * 131'072);  // 16 GiB
}

TEST_CASE("Gemma-2-9B: sliding layers hold at most 4,096 tokens") {
    // 21 sliding (even layers) + 21 full; 8,192 B per layer per token (2 x 8 x 256 x 2).
    auto m = preset("gemma-2-9b");
    auto s = kv(m, 8192);
    REQUIRE(s.groups.size() == 2);
    CHECK(s.groups[0].spec.kind == LayerKind::Sliding);
    CHECK(s.groups[0].layers == 21);
    CHECK(s.groups[0].spec.window_tokens == 4096);
    CHECK(s.groups[1].spec.kind == LayerKind::Full);
    CHECK(s.groups[1].layers == 21);
    // 21 x 8,192 B x 4,096 tokens + 21 x 8,192 B x 8,192 tokens = 704,643,072 + 1,409,286,144
    CHECK(s.bytes_per_sequence == 2'113'929'216);
    // Below the window every layer holds the whole context: 344,064 x 1,000.
    CHECK(kv(m, 1000).bytes_per_sequence == 344'064'000);
}

TEST_CASE("Gemma-3-1B: 22 sliding layers of 512 tokens and 4 full layers") {
    // sliding_window_pattern 6: layers 5, 11, 17, 23 full. 1,024 B per layer per token.
    auto s = kv(preset("gemma-3-1b"), 32768);
    REQUIRE(s.groups.size() == 2);
    CHECK(s.groups[0].layers == 22);
    CHECK(s.groups[1].layers == 4);
    // 22 x 1,024 x 512 + 4 x 1,024 x 32,768 = 11,534,336 + 134,217,728
    CHECK(s.bytes_per_sequence == 145'752'064);
}

TEST_CASE("gpt-oss-120b: alternating 128-token sliding and full layers") {
    // 18 sliding x 2,048 B x 128 + 18 full x 2,048 B x 131,072 (2 x 8 x 64 x 2 = 2,048 B per layer).
    auto s = kv(preset("gpt-oss-120b"), 131072);
    CHECK(s.bytes_per_sequence == 18LL * 2048 * 128 + 18LL * 2048 * 131072);
}

TEST_CASE("Mamba-2.8B keeps a fixed state per sequence, whatever the context") {
    // 64 layers x ((4 - 1) x 5120 conv + 5120 x 16 SSM) = 64 x 97,280 elements x 2 B (fp32 config -> fp16).
    auto m = preset("mamba-2.8b");
    auto a = kv(m, 1000);
    auto b = kv(m, 100000);
    CHECK(a.bytes_per_sequence == 64LL * 97'280 * 2);  // 12,451,840
    CHECK(b.bytes_per_sequence == a.bytes_per_sequence);
    CHECK(a.groups.at(0).spec.kind == LayerKind::State);
}

TEST_CASE("kv dtype: explicit fp8 halves and int4 quarters bf16") {
    auto m = preset("llama-3.1-8b");
    CHECK(kv(m, 1, 1, 1, Dtype::Fp8).bytes_per_token == 65'536);
    CHECK(kv(m, 1, 1, 1, Dtype::Int4).bytes_per_token == 32'768);
    CHECK(kv(m, 1, 1, 1, Dtype::Fp32).bytes_per_token == 262'144);
}

TEST_CASE("tensor parallelism splits KV heads across ranks") {
    auto m = preset("llama-3.1-8b");  // 8 KV heads
    CHECK(kv(m, 1000, 1, 2).bytes_per_gpu == 131'072LL * 1000 / 2);
    CHECK(kv(m, 1000, 1, 8).bytes_per_gpu == 131'072LL * 1000 / 8);  // one KV head per rank
    // Model-wide totals do not change with TP.
    CHECK(kv(m, 1000, 1, 8).bytes_total == 131'072LL * 1000);
}

TEST_CASE("tensor parallelism beyond the KV heads replicates them") {
    // Falcon-7B has one KV head (MQA) and 71 query heads: no TP > 1 divides 71.
    // Llama-3.1-70B: 8 KV heads, 64 heads; at tp 16 each rank still holds one KV head.
    auto m = preset("llama-3.1-70b");
    auto s = kv(m, 1000, 1, 16);
    CHECK(s.bytes_per_sequence_per_gpu == 2LL * 80 * 1 * 128 * 2 * 1000);  // 1 head per rank
    CHECK(s.bytes_per_gpu * 16 > s.bytes_total);                           // replication costs memory
}

TEST_CASE("MLA latents are replicated on every rank") {
    auto m = preset("deepseek-v3");
    CHECK(kv(m, 1000, 1, 8).bytes_per_gpu == 70'272LL * 1000);
}

TEST_CASE("a TP degree that does not divide the heads is refused, as engines refuse it") {
    CHECK_THROWS_AS(kv(preset("llama-3.1-8b"), 1, 1, 3), Error);  // 32 heads
    CHECK_THROWS_AS(kv(preset("falcon-7b"), 1, 1, 2), Error);     // 71 heads
    CHECK_THROWS_WITH(kv(preset("llama-3.1-8b"), 1, 1, 3), Catch::Contains("32 attention heads"));
}

TEST_CASE("products that overflow 64 bits fail loudly") {
    ManualShape s;
    s.layers = 10'000;
    s.kv_heads = 100'000;
    s.head_dim = 100'000;
    auto m = manual_model(s);
    // 2 x 1e5 x 1e5 x 2 B = 4e10 B per layer-token; x 1e4 layers = 4e14 B/token; x 1e9 tokens overflows.
    CHECK_THROWS_WITH(kv(m, 1'000'000'000), Catch::Contains("overflow"));
}
