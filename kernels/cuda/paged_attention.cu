#include "paged_attention.cuh"

#include <cuda_fp8.h>

#include <cfloat>
#include <cstring>
#include <stdexcept>

#include "cuda_check.cuh"

namespace kvplan::gpu {

namespace {

constexpr int kWarps = 4;

// Loads N consecutive cache elements as floats with one or two vector loads
// (N x sizeof(element) is 2 to 32 bytes, and rows are aligned to it).
template <typename T, int N>
__device__ inline void load_row(const T* src, float (&dst)[N], float scale) {
    constexpr int kBytes = N * static_cast<int>(sizeof(T));
    static_assert(kBytes == 2 || kBytes == 4 || kBytes == 8 || kBytes == 16 || kBytes == 32, "row slice must be 2-32 bytes");
    T v[N];
    if constexpr (kBytes == 2) *reinterpret_cast<uint16_t*>(v) = *reinterpret_cast<const uint16_t*>(src);
    else if constexpr (kBytes == 4) *reinterpret_cast<uint32_t*>(v) = *reinterpret_cast<const uint32_t*>(src);
    else if constexpr (kBytes == 8) *reinterpret_cast<uint2*>(v) = *reinterpret_cast<const uint2*>(src);
    else if constexpr (kBytes == 16) *reinterpret_cast<uint4*>(v) = *reinterpret_cast<const uint4*>(src);
    else {
        reinterpret_cast<uint4*>(v)[0] = reinterpret_cast<const uint4*>(src)[0];
        reinterpret_cast<uint4*>(v)[1] = reinterpret_cast<const uint4*>(src)[1];
    }
#pragma unroll
    for (int i = 0; i < N; ++i) dst[i] = static_cast<float>(v[i]) * scale;
}

__device__ inline float warp_sum(float x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

// grid (kv_heads, seqs, splits), block kWarps x 32. Each warp walks its
// share of the slice UNROLL tokens at a time: it issues the loads of all
// UNROLL K and V rows before using any, so that enough bytes are in flight to
// cover memory latency (an H200 needs about 25 KB per multiprocessor), then
// updates an online softmax per query head. The warps then merge in shared
// memory and write the slice's (max, sum, acc).
template <int D, int MAXG, typename KvT, int UNROLL>
__global__ void __launch_bounds__(kWarps * 32) split_kernel(PagedAttention p, int tokens_per_split, float* ws) {
    constexpr int PER_LANE = D / 32;
    const int g = blockIdx.x, s = blockIdx.y, split = blockIdx.z, splits = gridDim.z;
    const int group = p.heads / p.kv_heads;
    const int len = p.context_lens[s];
    const int begin = split * tokens_per_split;
    const int end = min(len, begin + tokens_per_split);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const float scale = rsqrtf(static_cast<float>(D));

    __shared__ float q_s[MAXG][D];
    for (int i = threadIdx.x; i < group * D; i += blockDim.x)
        q_s[i / D][i % D] = __bfloat162float(p.q[(static_cast<size_t>(s) * p.heads + g * group + i / D) * D + i % D]) * scale;
    __syncthreads();

    float q[MAXG][PER_LANE], acc[MAXG][PER_LANE], m[MAXG], l[MAXG];
#pragma unroll
    for (int h = 0; h < MAXG; ++h) {
        m[h] = -FLT_MAX;
        l[h] = 0.0f;
#pragma unroll
        for (int j = 0; j < PER_LANE; ++j) {
            q[h][j] = h < group ? q_s[h][lane * PER_LANE + j] : 0.0f;
            acc[h][j] = 0.0f;
        }
    }

    const KvT* kc = static_cast<const KvT*>(p.k_cache);
    const KvT* vc = static_cast<const KvT*>(p.v_cache);
    for (int t0 = begin + warp * UNROLL; t0 < end; t0 += kWarps * UNROLL) {
        float k[UNROLL][PER_LANE], v[UNROLL][PER_LANE];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int t = t0 + u;
            if (t < end) {
                const int block = p.block_table[static_cast<size_t>(s) * p.max_blocks + t / p.block_size];
                const size_t row = (static_cast<size_t>(block) * p.block_size + t % p.block_size) * p.kv_heads + g;
                load_row<KvT, PER_LANE>(kc + row * D + lane * PER_LANE, k[u], p.kv_scale);
                load_row<KvT, PER_LANE>(vc + row * D + lane * PER_LANE, v[u], p.kv_scale);
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (t0 + u >= end) break;  // the same for every lane of the warp
#pragma unroll
            for (int h = 0; h < MAXG; ++h) {
                if (h >= group) break;
                float dot = 0.0f;
#pragma unroll
                for (int j = 0; j < PER_LANE; ++j) dot += q[h][j] * k[u][j];
                dot = warp_sum(dot);
                const float m_new = fmaxf(m[h], dot);
                const float correction = __expf(m[h] - m_new);
                const float e = __expf(dot - m_new);
                l[h] = l[h] * correction + e;
#pragma unroll
                for (int j = 0; j < PER_LANE; ++j) acc[h][j] = acc[h][j] * correction + e * v[u][j];
                m[h] = m_new;
            }
        }
    }

    // Merge the warps.
    __shared__ float m_s[kWarps][MAXG], l_s[kWarps][MAXG];
    __shared__ float acc_s[kWarps][MAXG][D];
#pragma unroll
    for (int h = 0; h < MAXG; ++h) {
        if (lane == 0) {
            m_s[warp][h] = m[h];
            l_s[warp][h] = l[h];
        }
#pragma unroll
        for (int j = 0; j < PER_LANE; ++j) acc_s[warp][h][lane * PER_LANE + j] = acc[h][j];
    }
    __syncthreads();
    for (int i = threadIdx.x; i < group * D; i += blockDim.x) {
        const int h = i / D, d = i % D;
        float mx = -FLT_MAX;
        for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, m_s[w][h]);
        float sum = 0.0f, a = 0.0f;
        for (int w = 0; w < kWarps; ++w) {
            const float f = l_s[w][h] > 0.0f ? __expf(m_s[w][h] - mx) : 0.0f;
            sum += l_s[w][h] * f;
            a += acc_s[w][h][d] * f;
        }
        const size_t slot = (static_cast<size_t>(s) * p.heads + g * group + h) * splits + split;
        ws[slot * (D + 2) + 2 + d] = a;
        if (d == 0) {
            ws[slot * (D + 2)] = mx;
            ws[slot * (D + 2) + 1] = sum;
        }
    }
}

// grid (heads, seqs), block D: merge the slices of one query head.
template <int D>
__global__ void merge_kernel(PagedAttention p, int splits, const float* ws) {
    const int h = blockIdx.x, s = blockIdx.y, d = threadIdx.x;
    const size_t first = (static_cast<size_t>(s) * p.heads + h) * splits;
    float mx = -FLT_MAX;
    for (int k = 0; k < splits; ++k)
        if (ws[(first + k) * (D + 2) + 1] > 0.0f) mx = fmaxf(mx, ws[(first + k) * (D + 2)]);
    float sum = 0.0f, a = 0.0f;
    for (int k = 0; k < splits; ++k) {
        const float* slot = ws + (first + k) * (D + 2);
        if (slot[1] <= 0.0f) continue;  // an empty slice
        const float f = __expf(slot[0] - mx);
        sum += slot[1] * f;
        a += slot[2 + d] * f;
    }
    p.out[(static_cast<size_t>(s) * p.heads + h) * D + d] = __float2bfloat16(sum > 0.0f ? a / sum : 0.0f);
}

template <int D, int MAXG, typename KvT>
void launch(const PagedAttention& p, int splits, float* ws, cudaStream_t stream) {
    const int tokens_per_split = (p.max_context + splits - 1) / splits;
    constexpr int kUnroll = D >= 256 ? 2 : 4;
    split_kernel<D, MAXG, KvT, kUnroll><<<dim3(p.kv_heads, p.seqs, splits), kWarps * 32, 0, stream>>>(p, tokens_per_split, ws);
    KV_CUDA(cudaGetLastError());
    merge_kernel<D><<<dim3(p.heads, p.seqs), D, 0, stream>>>(p, splits, ws);
    KV_CUDA(cudaGetLastError());
}

template <typename KvT>
void launch_for_type(const PagedAttention& p, int splits, float* ws, cudaStream_t stream) {
    // The query heads per KV head set the register arrays' size: the smallest of 4, 8, 16 that holds the group.
    const int group = p.heads / p.kv_heads;
    if (p.head_dim == 64 && group <= 4) return launch<64, 4, KvT>(p, splits, ws, stream);
    if (p.head_dim == 64 && group <= 16) return launch<64, 16, KvT>(p, splits, ws, stream);
    if (p.head_dim == 128 && group <= 4) return launch<128, 4, KvT>(p, splits, ws, stream);
    if (p.head_dim == 128 && group <= 8) return launch<128, 8, KvT>(p, splits, ws, stream);
    if (p.head_dim == 128 && group <= 16) return launch<128, 16, KvT>(p, splits, ws, stream);
    if (p.head_dim == 256 && group <= 8) return launch<256, 8, KvT>(p, splits, ws, stream);
    throw std::invalid_argument("paged_attention: head_dim must be 64, 128 or 256 with at most 16 (8 for 256) query heads per KV head");
}

}  // namespace

std::size_t paged_attention_workspace_bytes(const PagedAttention& p, int splits) {
    return static_cast<std::size_t>(p.seqs) * p.heads * splits * (p.head_dim + 2) * sizeof(float);
}

int paged_attention_splits(const PagedAttention& p, int sms) {
    const int ctas = p.seqs * p.kv_heads;
    int splits = (4 * sms + ctas - 1) / ctas;                               // about four CTAs per multiprocessor
    splits = std::max(1, std::min(splits, (p.max_context + 127) / 128));  // at least 128 tokens per slice
    return splits;
}

void paged_attention(const PagedAttention& p, int splits, float* workspace, cudaStream_t stream) {
    if (p.heads % p.kv_heads != 0) throw std::invalid_argument("paged_attention: kv_heads must divide heads");
    if (p.kv_type == KvType::Bf16) launch_for_type<__nv_bfloat16>(p, splits, workspace, stream);
    else launch_for_type<__nv_fp8_e4m3>(p, splits, workspace, stream);
}

}  // namespace kvplan::gpu
