// Split-K "flash-decoding" attention over a paged KV cache, as vLLM lays it
// out: K and V in blocks of `block_size` tokens, [block][token][kv_head][dim],
// reached through a per-sequence block table. One CTA handles one KV head of
// one sequence over a slice of its tokens, for all the query heads that share
// that KV head (GQA), so each K and V row is read from memory once. A second
// kernel merges the slices with their softmax statistics.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace kvplan::gpu {

enum class KvType { Bf16, Fp8E4m3 };

struct PagedAttention {
    const __nv_bfloat16* q = nullptr;  // [seqs][heads][head_dim]
    const void* k_cache = nullptr;     // [blocks][block_size][kv_heads][head_dim]
    const void* v_cache = nullptr;
    const int* block_table = nullptr;  // [seqs][max_blocks]
    const int* context_lens = nullptr; // [seqs]: tokens each query attends to
    int seqs = 0, heads = 0, kv_heads = 0, head_dim = 128, block_size = 16, max_blocks = 0;
    int max_context = 0;               // the longest context_lens entry (sizes the split)
    KvType kv_type = KvType::Bf16;
    float kv_scale = 1.0f;             // fp8: stored value x scale
    __nv_bfloat16* out = nullptr;      // [seqs][heads][head_dim]
};

// Scratch the split kernel needs: seqs x heads x splits x (head_dim + 2) floats.
std::size_t paged_attention_workspace_bytes(const PagedAttention& p, int splits);

// How many slices to cut each sequence into so that the grid fills `sms` multiprocessors about twice.
int paged_attention_splits(const PagedAttention& p, int sms);

// Launches both kernels on `stream`. head_dim must be 64, 128 or 256 and
// heads / kv_heads at most 16 (8 for head_dim 256).
void paged_attention(const PagedAttention& p, int splits, float* workspace, cudaStream_t stream);

}  // namespace kvplan::gpu
