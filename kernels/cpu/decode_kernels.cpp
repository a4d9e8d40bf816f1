#include "decode_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace kvplan::kernels {

float bf16_to_float(std::uint16_t h) {
    const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

std::uint16_t float_to_bf16(float f) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40);  // NaN stays NaN
    const std::uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);                                    // to nearest, ties to even
    return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

namespace {

// Dot products with eight partial sums, which the compiler keeps in vector
// registers without -ffast-math (the summation order is fixed, so results
// are reproducible run to run).
float dot_f32(const float* a, const float* b, std::int64_t n) {
    float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) s[k] += a[i + k] * b[i + k];
    float tail = 0;
    for (; i < n; ++i) tail += a[i] * b[i];
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) + tail;
}

float dot_bf16(const std::uint16_t* a, const float* b, std::int64_t n) {
    float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) s[k] += bf16_to_float(a[i + k]) * b[i + k];
    float tail = 0;
    for (; i < n; ++i) tail += bf16_to_float(a[i]) * b[i];
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) + tail;
}

float dot_row(const Tensor& t, std::int64_t offset, const float* b, std::int64_t n) {
    return t.precision == Precision::F32 ? dot_f32(static_cast<const float*>(t.data) + offset, b, n)
                                         : dot_bf16(static_cast<const std::uint16_t*>(t.data) + offset, b, n);
}

// One row of `t` as floats: a pointer into the tensor when it holds fp32,
// else the row converted into `buffer` (exact: bf16 is a truncated fp32).
const float* row_as_f32(const Tensor& t, std::int64_t offset, std::int64_t n, float* buffer) {
    if (t.precision == Precision::F32) return static_cast<const float*>(t.data) + offset;
    const std::uint16_t* r = static_cast<const std::uint16_t*>(t.data) + offset;
    for (std::int64_t i = 0; i < n; ++i) buffer[i] = bf16_to_float(r[i]);
    return buffer;
}

}  // namespace

void matvec(ThreadPool& pool, const Tensor& w, std::int64_t rows, std::int64_t cols, const float* x, std::int64_t batch, float* y) {
    constexpr std::int64_t kRowsPerTask = 32;
    const std::int64_t tasks = (rows + kRowsPerTask - 1) / kRowsPerTask;
    pool.run(static_cast<std::size_t>(tasks), [&](std::size_t t) {
        const std::int64_t begin = static_cast<std::int64_t>(t) * kRowsPerTask;
        const std::int64_t end = std::min(rows, begin + kRowsPerTask);
        for (std::int64_t r = begin; r < end; ++r)
            for (std::int64_t b = 0; b < batch; ++b) y[b * rows + r] = dot_row(w, r * cols, x + b * cols, cols);
    });
}

void rmsnorm(const float* x, const float* weight, std::int64_t n, std::int64_t batch, float* y, float eps) {
    for (std::int64_t b = 0; b < batch; ++b) {
        const float* v = x + b * n;
        double ss = 0;
        for (std::int64_t i = 0; i < n; ++i) ss += static_cast<double>(v[i]) * v[i];
        const float scale = 1.0f / std::sqrt(static_cast<float>(ss / static_cast<double>(n)) + eps);
        for (std::int64_t i = 0; i < n; ++i) y[b * n + i] = v[i] * scale * weight[i];
    }
}

void rope(float* v, std::int64_t heads, std::int64_t head_dim, std::int64_t position, float theta) {
    const std::int64_t half = head_dim / 2;
    for (std::int64_t i = 0; i < half; ++i) {
        const double freq = std::pow(static_cast<double>(theta), -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
        const double angle = static_cast<double>(position) * freq;
        const float c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
        for (std::int64_t h = 0; h < heads; ++h) {
            float* x = v + h * head_dim;
            const float a = x[i], b = x[i + half];
            x[i] = a * c - b * s;
            x[i + half] = b * c + a * s;
        }
    }
}

void silu_mul(float* gate, const float* up, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void attention_decode(ThreadPool& pool, const AttentionShape& s, const float* q, const Tensor& k, const Tensor& v, float* out) {
    const std::int64_t group = s.heads / s.kv_heads;
    const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
    const std::int64_t token_stride = s.kv_heads * s.head_dim;
    pool.run(static_cast<std::size_t>(s.batch * s.kv_heads), [&](std::size_t task) {
        const std::int64_t b = static_cast<std::int64_t>(task) / s.kv_heads;
        const std::int64_t g = static_cast<std::int64_t>(task) % s.kv_heads;
        const std::int64_t base = b * s.capacity * token_stride + g * s.head_dim;
        std::vector<float> scores(static_cast<std::size_t>(group * s.tokens));
        std::vector<float> buffer(static_cast<std::size_t>(s.head_dim));
        // Scores: each K row read and converted once for all the group's query heads.
        for (std::int64_t t = 0; t < s.tokens; ++t) {
            const float* krow = row_as_f32(k, base + t * token_stride, s.head_dim, buffer.data());
            for (std::int64_t j = 0; j < group; ++j) {
                const float* qh = q + (b * s.heads + g * group + j) * s.head_dim;
                scores[static_cast<std::size_t>(j * s.tokens + t)] = dot_f32(krow, qh, s.head_dim) * scale;
            }
        }
        for (std::int64_t j = 0; j < group; ++j) {
            float* row = scores.data() + j * s.tokens;
            const float mx = *std::max_element(row, row + s.tokens);
            double sum = 0;
            for (std::int64_t t = 0; t < s.tokens; ++t) sum += (row[t] = std::exp(row[t] - mx));
            for (std::int64_t t = 0; t < s.tokens; ++t) row[t] = static_cast<float>(row[t] / sum);
            std::fill(out + (b * s.heads + g * group + j) * s.head_dim, out + (b * s.heads + g * group + j + 1) * s.head_dim, 0.0f);
        }
        // Weighted sum: each V row read and converted once for the group.
        for (std::int64_t t = 0; t < s.tokens; ++t) {
            const float* vrow = row_as_f32(v, base + t * token_stride, s.head_dim, buffer.data());
            for (std::int64_t j = 0; j < group; ++j) {
                const float p = scores[static_cast<std::size_t>(j * s.tokens + t)];
                float* y = out + (b * s.heads + g * group + j) * s.head_dim;
                for (std::int64_t i = 0; i < s.head_dim; ++i) y[i] += p * vrow[i];
            }
        }
    });
}

}  // namespace kvplan::kernels
