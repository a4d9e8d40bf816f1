// A transformer decode step (and a prefill) on the CPU, for a model's real
// layer shapes: per layer RMSNorm, the QKV projection, rotary embedding,
// grouped-query attention over the KV cache, the output projection, RMSNorm
// and the (SiLU-gated) MLP. Weights are random, made here (nothing is read or
// downloaded); a sample of layers stands for the model.
#pragma once

#include <cstdint>
#include <vector>

#include "decode_kernels.hpp"
#include "thread_pool.hpp"

namespace kvplan::kernels {

struct LayerShape {
    std::int64_t hidden = 4096;
    std::int64_t heads = 32;
    std::int64_t kv_heads = 8;
    std::int64_t head_dim = 128;
    std::int64_t intermediate = 14336;
    bool gated = true;  // gate and up projections (SwiGLU), else one up projection
};

// Seconds per step, by component, for all the layers built.
struct StepTimes {
    double qkv_s = 0;
    double attention_s = 0;
    double o_proj_s = 0;
    double mlp_s = 0;
    double other_s = 0;  // norms, rotary embedding, residual adds, KV appends
    double total() const { return qkv_s + attention_s + o_proj_s + mlp_s + other_s; }
};

class CpuModel {
public:
    // `layers` layers of `shape` with weights and KV cache in `precision`, a
    // cache laid out for `capacity` tokens per sequence and `batch` sequences.
    // `windows[i]` > 0 makes layer i attend to its last windows[i] tokens only
    // (sliding-window attention); empty or 0: full attention.
    CpuModel(ThreadPool& pool, const LayerShape& shape, std::int64_t layers, std::int64_t batch, std::int64_t capacity, Precision precision,
             std::vector<std::int64_t> windows = {});

    // One decode step: every sequence has `context` tokens cached and adds one.
    StepTimes decode(std::int64_t context);

    // A prefill of `prompt` tokens for sequence 0, from an empty cache.
    StepTimes prefill(std::int64_t prompt);

    // The hidden state after the last step (for tests).
    const std::vector<float>& hidden_state() const { return x_; }

private:
    struct Layer {
        std::vector<std::uint8_t> qkv, o, gate, up, down;  // raw storage in `precision_`
        std::vector<float> norm1, norm2;
        std::vector<std::uint8_t> k, v;  // [batch][capacity][kv_heads][head_dim]
    };
    Tensor tensor(const std::vector<std::uint8_t>& bytes) const { return Tensor{precision_, bytes.data()}; }
    void store_kv(Layer& l, std::int64_t seq, std::int64_t position, const float* k, const float* v);
    StepTimes run(std::int64_t tokens, std::int64_t first_position, bool prefill);

    ThreadPool& pool_;
    LayerShape shape_;
    std::int64_t batch_, capacity_;
    Precision precision_;
    std::vector<Layer> layers_;
    std::vector<std::int64_t> windows_;
    std::vector<float> x_;
};

}  // namespace kvplan::kernels
