// Golden figures from the seed documents in ../shared/seeds/ (the lessons that
// started the project). Each TEST_CASE quotes the figure it checks.
#include <catch2/catch.hpp>

#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

// The seeds' constructed models have no config file: build them by hand.
ModelSpec shape(std::int64_t layers, std::int64_t kv_heads, std::int64_t head_dim, std::int64_t heads = 0) {
    ManualShape s;
    s.layers = layers;
    s.kv_heads = kv_heads;
    s.head_dim = head_dim;
    s.heads = heads;
    return manual_model(s);
}

}  // namespace

TEST_CASE("seed 000: 32 layers x 4096 hidden in bf16 is 524,288 bytes (512 KB) per token") {
    // "2 x 32 x 4096 x 2 = 524,288"; MHA so kv_heads x head_dim = 32 x 128 = 4096.
    auto m = shape(32, 32, 128);
    CHECK(kv(m).bytes_per_token == 524'288);
}

TEST_CASE("seed 000: a 2,000-token context holds 1.049e9 bytes") {
    // "2,000 tokens x 524,288 bytes = 1.049e9 bytes"
    auto s = kv(shape(32, 32, 128), 2000);
    CHECK(s.bytes_per_sequence == 1'048'576'000);
    CHECK(s.bytes_per_sequence / 1e9 == Approx(1.049).margin(0.0005));
}

TEST_CASE("seed 000: thirty-two 2,000-token requests hold about 33.6 GB") {
    // "32 x 1.05 GB = 33.6 GB": 32 x 1,048,576,000 = 33,554,432,000 bytes.
    auto s = kv(shape(32, 32, 128), 2000, 32);
    CHECK(s.bytes_total == 33'554'432'000);
    CHECK(s.bytes_total / 1e9 == Approx(33.6).margin(0.05));
}

TEST_CASE("seed 000: 8,000 and 500 tokens cost 4.19 GB and 0.26 GB per request") {
    // "24.0 / 4.19" and "24.0 / 0.26": 8,000 x 524,288 and 500 x 524,288 bytes.
    CHECK(kv(shape(32, 32, 128), 8000).bytes_per_sequence == 4'194'304'000);
    CHECK(kv(shape(32, 32, 128), 500).bytes_per_sequence == 262'144'000);
}

TEST_CASE("seed 001: the 13B shape (40 layers, 5120 hidden, bf16) is 819,200 bytes per token") {
    // "2 * 40 * 5120 * 2 = 819,200 bytes ~ 800 KiB / token"; 5120 = 40 heads x 128.
    auto m = shape(40, 40, 128);
    CHECK(kv(m).bytes_per_token == 819'200);
    // "800 KiB x 4096 = 3.1 GiB" for a 4096-token conversation: 819,200 x 4,096 = 3,355,443,200 B = 3.125 GiB.
    auto s = kv(m, 4096);
    CHECK(s.bytes_per_sequence == 3'355'443'200);
    CHECK(s.bytes_per_sequence / double(1LL << 30) == Approx(3.125));
    // "ten such users need about 31 GiB"
    CHECK(kv(m, 4096, 10).bytes_total / double(1LL << 30) == Approx(31.25));
}

TEST_CASE("seed 002: 32 layers x 8 KV heads x 128 head_dim in 16 bits is 131,072 bytes (128 KiB) per token") {
    // "2 x 32 x 8 x 128 x 2 bytes = 131,072 bytes, which is 128 KiB."
    CHECK(kv(shape(32, 8, 128, 32)).bytes_per_token == 131'072);
}

TEST_CASE("seed 002: the GQA / fp8 / MQA table for the 8B shape at 4,000 tokens") {
    // configs = {MHA 32 KV heads fp16, GQA 8 fp16, GQA 8 fp8, MQA 1 fp16}: KiB/token and GiB per 4k chat.
    struct Row {
        std::int64_t kv_heads;
        Dtype dtype;
        std::int64_t per_token;
        double gib_per_chat;
    };
    const Row rows[] = {
        {32, Dtype::Fp16, 524'288, 1.953},  // 512 KiB/token; 4000 x 524,288 / 2^30 = 1.953 GiB ("2 GiB of cache")
        {8, Dtype::Fp16, 131'072, 0.488},   // 128 KiB; a quarter ("cuts that by four")
        {8, Dtype::Fp8, 65'536, 0.244},     // 64 KiB; "halves it again"
        {1, Dtype::Fp16, 16'384, 0.061},    // 16 KiB
    };
    for (const Row& r : rows) {
        auto s = kv(shape(32, r.kv_heads, 128, 32), 4000, 1, 1, r.dtype);
        CHECK(s.bytes_per_token == r.per_token);
        CHECK(s.bytes_per_sequence / double(1LL << 30) == Approx(r.gib_per_chat).margin(0.001));
    }
}

TEST_CASE("seed 000: quadrupling the context quarters the requests that fit in a fixed pool") {
    // The seeds' "quadrupling the context length quarters your concurrency": per-sequence bytes scale by 4.
    auto m = shape(32, 32, 128);
    CHECK(kv(m, 8000).bytes_per_sequence == 4 * kv(m, 2000).bytes_per_sequence);
}
