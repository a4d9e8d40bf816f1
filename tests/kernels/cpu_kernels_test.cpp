// The CPU kernels against their naive references (kernels/cpu/reference.*).
// Tolerances are derived, not guessed: an fp32 dot product of n terms of
// magnitude |a||b| summed in a different order differs from the double
// reference by at most about n x 2^-24 x sum|a_i b_i| (each rounding is at most
// half an ulp, 2^-24 relative); bf16 inputs are converted exactly, so the same
// bound holds for the products of bf16-rounded values.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "cpu/decode_kernels.hpp"
#include "cpu/decode_step.hpp"
#include "cpu/reference.hpp"
#include "cpu/stream.hpp"
#include "cpu/thread_pool.hpp"
#include "cpu/timing.hpp"

using namespace kvplan::kernels;

namespace {

std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

std::vector<std::uint16_t> to_bf16(const std::vector<float>& v) {
    std::vector<std::uint16_t> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = float_to_bf16(v[i]);
    return out;
}

// n x 2^-24 x sum |a_i b_i|, with sum |a_i b_i| <= n for values in [-1, 1].
double dot_bound(std::int64_t n) {
    return static_cast<double>(n) * static_cast<double>(n) * std::ldexp(1.0, -24);
}

}  // namespace

TEST_CASE("bf16 conversion rounds to nearest even and round-trips exactly") {
    CHECK(float_to_bf16(1.0f) == 0x3f80);
    CHECK(bf16_to_float(0x3f80) == 1.0f);
    CHECK(bf16_to_float(float_to_bf16(-2.5f)) == -2.5f);
    // 1 + 2^-8 lies exactly between bf16 1.0 and 1.0078125: ties go to the even mantissa (1.0).
    CHECK(bf16_to_float(float_to_bf16(1.0f + std::ldexp(1.0f, -8))) == 1.0f);
    CHECK(bf16_to_float(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8))) == 1.015625f);
    CHECK(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
}

TEST_CASE("matvec matches the reference for fp32 and bf16 weights, any thread count") {
    const std::int64_t rows = 97, cols = 300, batch = 3;
    const auto w = random_floats(static_cast<std::size_t>(rows * cols), 1);
    const auto x = random_floats(static_cast<std::size_t>(batch * cols), 2);
    const auto wb = to_bf16(w);
    for (unsigned threads : {1u, 2u, 5u}) {
        ThreadPool pool(threads);
        for (Precision p : {Precision::F32, Precision::Bf16}) {
            Tensor t{p, p == Precision::F32 ? static_cast<const void*>(w.data()) : static_cast<const void*>(wb.data())};
            std::vector<float> y(static_cast<std::size_t>(batch * rows)), ref(y.size());
            matvec(pool, t, rows, cols, x.data(), batch, y.data());
            reference::matvec(t, rows, cols, x.data(), batch, ref.data());
            for (std::size_t i = 0; i < y.size(); ++i) REQUIRE(std::abs(y[i] - ref[i]) <= dot_bound(cols));
        }
    }
}

TEST_CASE("GQA attention matches the reference, each group of query heads shares its KV head") {
    AttentionShape s{2, 8, 2, 16, 37, 40};
    const auto q = random_floats(static_cast<std::size_t>(s.batch * s.heads * s.head_dim), 3);
    const auto k = random_floats(static_cast<std::size_t>(s.batch * s.capacity * s.kv_heads * s.head_dim), 4);
    const auto v = random_floats(k.size(), 5);
    const auto kb = to_bf16(k), vb = to_bf16(v);
    ThreadPool pool(3);
    for (Precision p : {Precision::F32, Precision::Bf16}) {
        Tensor kt{p, p == Precision::F32 ? static_cast<const void*>(k.data()) : static_cast<const void*>(kb.data())};
        Tensor vt{p, p == Precision::F32 ? static_cast<const void*>(v.data()) : static_cast<const void*>(vb.data())};
        std::vector<float> out(q.size()), ref(q.size());
        attention_decode(pool, s, q.data(), kt, vt, out.data());
        reference::attention_decode(s, q.data(), kt, vt, ref.data());
        // Scores carry the dot bound of head_dim terms (scaled by 1/4); softmax weights are within a relative
        // 1e-5 of each other's rounding; outputs are convex combinations of values in [-1, 1]: 1e-5 absolute.
        for (std::size_t i = 0; i < out.size(); ++i) REQUIRE(std::abs(out[i] - ref[i]) <= 1e-5);
    }
}

TEST_CASE("RMSNorm, rotary embedding and SiLU follow their definitions") {
    std::vector<float> x{3.0f, 4.0f}, w{1.0f, 2.0f}, y(2);
    rmsnorm(x.data(), w.data(), 2, 1, y.data(), 0.0f);
    // rms = sqrt((9 + 16) / 2) = 3.5355
    CHECK(y[0] == Approx(3.0 / std::sqrt(12.5)));
    CHECK(y[1] == Approx(2 * 4.0 / std::sqrt(12.5)));
    // Position 0 is the identity; a rotation keeps each pair's norm.
    std::vector<float> v{1, 2, 3, 4};
    rope(v.data(), 1, 4, 0);
    CHECK(v == std::vector<float>{1, 2, 3, 4});
    rope(v.data(), 1, 4, 7);
    CHECK(v[0] * v[0] + v[2] * v[2] == Approx(1 + 9));
    CHECK(v[1] * v[1] + v[3] * v[3] == Approx(4 + 16));
    std::vector<float> g{0.0f, 2.0f}, u{5.0f, 1.0f};
    silu_mul(g.data(), u.data(), 2);
    CHECK(g[0] == 0.0f);
    CHECK(g[1] == Approx(2.0 / (1 + std::exp(-2.0))));
}

TEST_CASE("the thread pool runs every index exactly once, over many runs") {
    ThreadPool pool(4);
    for (int round = 0; round < 200; ++round) {
        std::vector<int> hits(static_cast<std::size_t>(round % 37 + 1), 0);
        pool.run(hits.size(), [&](std::size_t i) { ++hits[i]; });
        for (int h : hits) REQUIRE(h == 1);
    }
}

TEST_CASE("a CPU decode step gives the same hidden state on 1 and 3 threads, and finite values") {
    LayerShape s{64, 4, 2, 16, 128, true};
    std::vector<float> results[2];
    int i = 0;
    for (unsigned threads : {1u, 3u}) {
        ThreadPool pool(threads);
        CpuModel m(pool, s, 2, 2, 20, Precision::Bf16);
        m.decode(10);
        m.prefill(5);
        results[i++] = m.hidden_state();
        for (float v : m.hidden_state()) REQUIRE(std::isfinite(v));
    }
    // Each output element is computed by one thread in the same order: bit-identical.
    CHECK(results[0] == results[1]);
}

TEST_CASE("STREAM figures are positive and consistent") {
    ThreadPool pool(2);
    StreamResult r = measure_stream(pool, 4 << 20, 2);
    CHECK(r.read_bytes_per_s > 1e8);
    CHECK(r.copy_bytes_per_s > 1e8);
    CHECK(r.triad_bytes_per_s > 1e8);
    CHECK(r.array_bytes == 4u << 20);
    for (const Spread& s : {r.read, r.copy, r.triad}) {
        CHECK(s.min <= s.median);
        CHECK(s.median <= s.max);
    }
    CHECK(r.read.median == r.read_bytes_per_s);
}

TEST_CASE("a rate's spread runs from the slowest repeat to the fastest around the median") {
    // 12 bytes in 3 s, 2 s and 4 s: 4, 6 and 3 B/s; the median time 3 s gives 4 B/s.
    const Spread s = kvplan::kernels::rate_spread(12.0, {3.0, 2.0, 4.0});
    CHECK(s.median == 4.0);
    CHECK(s.min == 3.0);
    CHECK(s.max == 6.0);
}

TEST_CASE("the median of repeated timings is the middle value, or the mean of the two middle ones") {
    CHECK(kvplan::kernels::median({3.0, 1.0, 2.0}) == 2.0);
    CHECK(kvplan::kernels::median({4.0, 1.0, 3.0, 2.0}) == 2.5);
    CHECK(kvplan::kernels::median({7.0}) == 7.0);
}
