// A transformer decode step on the GPU for a model's real shapes, with random
// bf16 weights made on the device (nothing is downloaded): per layer RMSNorm,
// the QKV projection (cuBLAS), rotary embedding and the KV append into a
// paged cache, split-K paged attention, the output projection, RMSNorm, the
// SiLU-gated MLP (cuBLAS) and residual adds. Steps are captured as CUDA
// graphs and timed by replay with CUDA events.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "paged_attention.cuh"

namespace kvplan::gpu {

struct ModelShape {
    int hidden = 4096, heads = 32, kv_heads = 8, head_dim = 128, intermediate = 14336;
    int layers = 32;  // the model's layers; `sampled` of them are built
};

// Milliseconds per step (all the sampled layers), by component; medians.
struct StepMs {
    double total = 0, qkv = 0, attention = 0, o_proj = 0, mlp = 0, other = 0;
};

class GpuModel {
public:
    // Builds `sampled` layers for `seqs` sequences with room for `capacity`
    // tokens each. Throws std::runtime_error when it would not fit in free memory.
    GpuModel(const ModelShape& shape, int sampled, int seqs, int capacity, KvType kv);
    ~GpuModel();
    GpuModel(const GpuModel&) = delete;
    GpuModel& operator=(const GpuModel&) = delete;

    // Bytes a model of this shape needs on the device (weights of `sampled` layers, cache, activations).
    static std::size_t bytes_needed(const ModelShape& shape, int sampled, int seqs, int capacity, KvType kv);

    // One decode step at `context` cached tokens per sequence (all `seqs`
    // sequences), timed over `repeats` graph replays.
    StepMs decode(int context, int repeats);
    // A prefill of `prompt` tokens of sequence 0, timed likewise.
    StepMs prefill(int prompt, int repeats);

    // Achieved FLOP/s of the cuBLAS GEMM of the MLP's gate/up projection over `tokens` tokens.
    double gemm_flops(int tokens, int repeats);

private:
    void run_layers(int rows, int context, bool prefill, int component);  // component < 0: all
    double time_graph(int rows, int context, bool prefill, int component, int repeats);

    ModelShape s_;
    int sampled_, seqs_, capacity_, max_blocks_;
    KvType kv_;
    cublasHandle_t blas_ = nullptr;
    cudaStream_t stream_ = nullptr;
    void* blas_workspace_ = nullptr;
    std::vector<__nv_bfloat16*> wqkv_, wo_, wgu_, wdown_;
    std::vector<void*> kcache_, vcache_;
    __nv_bfloat16* norm_ = nullptr;  // ones, shared by every norm
    int *block_table_ = nullptr, *context_lens_ = nullptr;
    int *prefill_table_ = nullptr, *prefill_lens_ = nullptr;
    __nv_bfloat16 *x_ = nullptr, *h_ = nullptr, *qkv_ = nullptr, *q_ = nullptr, *attn_ = nullptr, *out_ = nullptr, *gu_ = nullptr, *act_ = nullptr;
    float* attn_ws_ = nullptr;
    std::size_t attn_ws_bytes_ = 0;
    int sms_ = 0;
};

}  // namespace kvplan::gpu
