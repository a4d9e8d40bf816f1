// The pieces of a transformer decode step on the CPU: matrix-vector products
// over fp32 or bf16 weights, RMSNorm, rotary embedding, SiLU-gated MLP and
// grouped-query attention over a KV cache. Each has a naive single-threaded
// reference in reference.hpp that the tests compare it with.
//
// Layouts: a weight matrix is [rows = out][cols = in], row-major; activations
// are [sequence][features]; the KV cache of one layer is [sequence][token]
// [kv_head][head_dim] for K and again for V.
#pragma once

#include <cstdint>

#include "thread_pool.hpp"

namespace kvplan::kernels {

// bf16 <-> fp32: bf16 is the top 16 bits of an fp32 (round to nearest even when narrowing).
float bf16_to_float(std::uint16_t h);
std::uint16_t float_to_bf16(float f);

enum class Precision { F32, Bf16 };

// A weight matrix or KV tensor in one of the two precisions (not owning).
struct Tensor {
    Precision precision = Precision::F32;
    const void* data = nullptr;
    float at(std::int64_t i) const {
        return precision == Precision::F32 ? static_cast<const float*>(data)[i] : bf16_to_float(static_cast<const std::uint16_t*>(data)[i]);
    }
};

// y[b][r] = sum_c W[r][c] x[b][c] for every b < batch: each row of W is read
// once and applied to every sequence (the weights dominate the bytes).
void matvec(ThreadPool& pool, const Tensor& w, std::int64_t rows, std::int64_t cols, const float* x, std::int64_t batch, float* y);

// y = x / rms(x) * weight, for each of `batch` vectors of n.
void rmsnorm(const float* x, const float* weight, std::int64_t n, std::int64_t batch, float* y, float eps = 1e-5f);

// Rotary embedding (Llama's rotate-half form) on `heads` heads of head_dim at `position`.
void rope(float* v, std::int64_t heads, std::int64_t head_dim, std::int64_t position, float theta = 500000.0f);

// gate[i] = silu(gate[i]) * up[i].
void silu_mul(float* gate, const float* up, std::int64_t n);

struct AttentionShape {
    std::int64_t batch = 1;
    std::int64_t heads = 32;    // query heads
    std::int64_t kv_heads = 8;  // heads of K and V; query heads share them in groups
    std::int64_t head_dim = 128;
    std::int64_t tokens = 0;    // cached tokens each query attends to (including its own)
    std::int64_t capacity = 0;  // tokens the cache rows are laid out for (>= tokens)
};

// out[b][h][:] = softmax(q[b][h] . K[b][:][g]^T / sqrt(d)) V[b][:][g], g = h / (heads / kv_heads).
// Query heads of one group are processed together, so each K and V row is read once per group.
void attention_decode(ThreadPool& pool, const AttentionShape& s, const float* q, const Tensor& k, const Tensor& v, float* out);

}  // namespace kvplan::kernels
