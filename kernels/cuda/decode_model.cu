#include "decode_model.cuh"

#include <cuda_fp8.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "cuda_check.cuh"
#include "timing.cuh"

namespace kvplan::gpu {

namespace {

enum Component { kAll = -1, kQkv = 0, kAttention = 1, kOProj = 2, kMlp = 3, kOther = 4 };

__device__ inline float unit_hash(std::uint64_t i, std::uint32_t seed) {
    std::uint64_t z = i * 0x9e3779b97f4a7c15ull + seed * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<float>(z >> 40) / static_cast<float>(1ull << 24);  // [0, 1)
}

__global__ void fill_bf16(__nv_bfloat16* p, std::size_t n, float scale, std::uint32_t seed) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        p[i] = __float2bfloat16((2.0f * unit_hash(i, seed) - 1.0f) * scale);
}

// fp8 e4m3 bytes with exponent field <= 6: magnitudes below 1, never NaN.
__global__ void fill_fp8(std::uint8_t* p, std::size_t n, std::uint32_t seed) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        const unsigned r = static_cast<unsigned>(unit_hash(i, seed) * 16777216.0f);
        p[i] = static_cast<std::uint8_t>((r & 0x80u) | (r % 0x38u));
    }
}

__global__ void rmsnorm_kernel(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y, int n) {
    const __nv_bfloat16* row = x + static_cast<std::size_t>(blockIdx.x) * n;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const float v = __bfloat162float(row[i]);
        ss += v * v;
    }
    __shared__ float partial[32];
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
    __syncthreads();
    if (threadIdx.x < 32) {
        float t = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
        if (threadIdx.x == 0) partial[0] = rsqrtf(t / static_cast<float>(n) + 1e-5f);
    }
    __syncthreads();
    const float scale = partial[0];
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        y[static_cast<std::size_t>(blockIdx.x) * n + i] = __float2bfloat16(__bfloat162float(row[i]) * scale * __bfloat162float(w[i]));
}

__global__ void add_kernel(__nv_bfloat16* x, const __nv_bfloat16* y, std::size_t n) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        x[i] = __float2bfloat16(__bfloat162float(x[i]) + __bfloat162float(y[i]));
}

// gu holds [gate | up] per row; act = silu(gate) * up.
__global__ void silu_mul_kernel(const __nv_bfloat16* gu, __nv_bfloat16* act, int inter, std::size_t rows) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < rows * inter; i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        const std::size_t r = i / inter, c = i % inter;
        const float g = __bfloat162float(gu[r * 2 * inter + c]), u = __bfloat162float(gu[r * 2 * inter + inter + c]);
        act[i] = __float2bfloat16(g / (1.0f + __expf(-g)) * u);
    }
}

// One block per (row, head of q / k / v). Rotates q and k (rotate-half form),
// writes q to its buffer and k, v into the paged cache at the row's position.
template <typename KvT>
__global__ void rope_append_kernel(const __nv_bfloat16* qkv, __nv_bfloat16* q, KvT* kc, KvT* vc, const int* block_table, int max_blocks,
                                   int heads, int kv_heads, int head_dim, int block_size, int context, bool prefill) {
    const int row = blockIdx.x, head = blockIdx.y, i = threadIdx.x;  // i < head_dim / 2
    const int half = head_dim / 2;
    const int position = prefill ? row : context;
    const int seq = prefill ? 0 : row;
    const int width = (heads + 2 * kv_heads) * head_dim;
    const __nv_bfloat16* src = qkv + static_cast<std::size_t>(row) * width + head * head_dim;
    const float freq = __powf(500000.0f, -2.0f * static_cast<float>(i) / static_cast<float>(head_dim));
    float sn, cs;
    __sincosf(static_cast<float>(position) * freq, &sn, &cs);
    float a = __bfloat162float(src[i]), b = __bfloat162float(src[i + half]);
    if (head < heads + kv_heads) {  // q and k rotate; v does not
        const float ra = a * cs - b * sn, rb = b * cs + a * sn;
        a = ra;
        b = rb;
    }
    if (head < heads) {
        __nv_bfloat16* dst = q + (static_cast<std::size_t>(row) * heads + head) * head_dim;
        dst[i] = __float2bfloat16(a);
        dst[i + half] = __float2bfloat16(b);
        return;
    }
    const bool is_k = head < heads + kv_heads;
    const int g = is_k ? head - heads : head - heads - kv_heads;
    const int block = block_table[static_cast<std::size_t>(seq) * max_blocks + position / block_size];
    KvT* dst = (is_k ? kc : vc) + ((static_cast<std::size_t>(block) * block_size + position % block_size) * kv_heads + g) * head_dim;
    dst[i] = static_cast<KvT>(a);
    dst[i + half] = static_cast<KvT>(b);
}

int grid_for(std::size_t n) { return static_cast<int>(std::min<std::size_t>((n + 255) / 256, 4096)); }

}  // namespace

std::size_t GpuModel::bytes_needed(const ModelShape& s, int sampled, int seqs, int capacity, KvType kv) {
    const std::size_t q = static_cast<std::size_t>(s.heads) * s.head_dim, k = static_cast<std::size_t>(s.kv_heads) * s.head_dim;
    const std::size_t h = s.hidden, inter = s.intermediate;
    const std::size_t weights = ((q + 2 * k) * h + h * q + 2 * inter * h + h * inter) * 2;
    const std::size_t blocks = static_cast<std::size_t>(seqs) * ((capacity + 15) / 16);
    const std::size_t cache = 2 * blocks * 16 * k * (kv == KvType::Bf16 ? 2 : 1);
    const std::size_t rows = std::max(seqs, capacity);
    const std::size_t activations = rows * (3 * h + (q + 2 * k) + 2 * q + 3 * inter) * 2;
    // Attention scratch: at most 4 x SMs / (queries x kv_heads) + 1 slices per query head; 264 SMs is a generous bound.
    const std::size_t slices = std::max<std::size_t>(1, 4 * 264 / (static_cast<std::size_t>(seqs) * s.kv_heads) + 1);
    const std::size_t scratch = std::max(static_cast<std::size_t>(seqs) * slices, static_cast<std::size_t>(capacity)) * s.heads * (s.head_dim + 2) * 4;
    return sampled * (weights + cache) + activations + scratch + (64u << 20);
}

GpuModel::GpuModel(const ModelShape& s, int sampled, int seqs, int capacity, KvType kv)
    : s_(s), sampled_(sampled), seqs_(seqs), capacity_(capacity), max_blocks_((capacity + 15) / 16), kv_(kv) {
    std::size_t free_bytes = 0, total = 0;
    KV_CUDA(cudaMemGetInfo(&free_bytes, &total));
    const std::size_t need = bytes_needed(s, sampled, seqs, capacity, kv);
    if (need > free_bytes / 10 * 9)
        throw std::runtime_error("the model needs " + std::to_string(need >> 20) + " MiB but only " + std::to_string(free_bytes >> 20) +
                                 " MiB are free; sample fewer layers or a smaller batch");
    KV_CUDA(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, 0));
    KV_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    KV_CUBLAS(cublasCreate(&blas_));
    KV_CUBLAS(cublasSetStream(blas_, stream_));
    KV_CUDA(cudaMalloc(&blas_workspace_, 32u << 20));
    KV_CUBLAS(cublasSetWorkspace(blas_, blas_workspace_, 32u << 20));

    const std::size_t q = static_cast<std::size_t>(s.heads) * s.head_dim, k = static_cast<std::size_t>(s.kv_heads) * s.head_dim;
    const std::size_t h = s.hidden, inter = s.intermediate;
    auto weights = [&](std::size_t n, float scale, std::uint32_t seed) {
        __nv_bfloat16* p = nullptr;
        KV_CUDA(cudaMalloc(&p, n * 2));
        fill_bf16<<<grid_for(n), 256, 0, stream_>>>(p, n, scale, seed);
        return p;
    };
    const std::size_t cache_elems = static_cast<std::size_t>(seqs) * max_blocks_ * 16 * k;
    for (int l = 0; l < sampled; ++l) {
        const std::uint32_t seed = 16u * l + 1;
        wqkv_.push_back(weights((q + 2 * k) * h, 1.0f / sqrtf(static_cast<float>(h)), seed));
        wo_.push_back(weights(h * q, 1.0f / sqrtf(static_cast<float>(q)), seed + 1));
        wgu_.push_back(weights(2 * inter * h, 1.0f / sqrtf(static_cast<float>(h)), seed + 2));
        wdown_.push_back(weights(h * inter, 1.0f / sqrtf(static_cast<float>(inter)), seed + 3));
        for (int which = 0; which < 2; ++which) {
            void* c = nullptr;
            if (kv == KvType::Bf16) {
                c = weights(cache_elems, 1.0f, seed + 4 + which);
            } else {
                KV_CUDA(cudaMalloc(&c, cache_elems));
                fill_fp8<<<grid_for(cache_elems), 256, 0, stream_>>>(static_cast<std::uint8_t*>(c), cache_elems, seed + 4 + which);
            }
            (which == 0 ? kcache_ : vcache_).push_back(c);
        }
    }
    KV_CUDA(cudaMalloc(&norm_, h * 2));
    std::vector<__nv_bfloat16> ones(h, __float2bfloat16(1.0f));
    KV_CUDA(cudaMemcpy(norm_, ones.data(), h * 2, cudaMemcpyHostToDevice));

    // Block tables: each sequence gets max_blocks blocks in a shuffled (but fixed) order, as a paged allocator hands them out.
    std::vector<int> table(static_cast<std::size_t>(seqs) * max_blocks_);
    std::iota(table.begin(), table.end(), 0);
    for (std::size_t i = table.size(); i > 1; --i) std::swap(table[i - 1], table[(i * 2654435761u) % i]);
    KV_CUDA(cudaMalloc(&block_table_, table.size() * sizeof(int)));
    KV_CUDA(cudaMemcpy(block_table_, table.data(), table.size() * sizeof(int), cudaMemcpyHostToDevice));
    std::vector<int> prefill_table;
    for (int r = 0; r < capacity; ++r) prefill_table.insert(prefill_table.end(), table.begin(), table.begin() + max_blocks_);
    std::vector<int> prefill_lens(static_cast<std::size_t>(capacity));
    std::iota(prefill_lens.begin(), prefill_lens.end(), 1);
    KV_CUDA(cudaMalloc(&prefill_table_, prefill_table.size() * sizeof(int)));
    KV_CUDA(cudaMemcpy(prefill_table_, prefill_table.data(), prefill_table.size() * sizeof(int), cudaMemcpyHostToDevice));
    KV_CUDA(cudaMalloc(&prefill_lens_, prefill_lens.size() * sizeof(int)));
    KV_CUDA(cudaMemcpy(prefill_lens_, prefill_lens.data(), prefill_lens.size() * sizeof(int), cudaMemcpyHostToDevice));
    KV_CUDA(cudaMalloc(&context_lens_, static_cast<std::size_t>(seqs) * sizeof(int)));

    const std::size_t rows = std::max(seqs, capacity);
    x_ = weights(rows * h, 0.5f, 999);
    KV_CUDA(cudaMalloc(&h_, rows * h * 2));
    KV_CUDA(cudaMalloc(&qkv_, rows * (q + 2 * k) * 2));
    KV_CUDA(cudaMalloc(&q_, rows * q * 2));
    KV_CUDA(cudaMalloc(&attn_, rows * q * 2));
    KV_CUDA(cudaMalloc(&out_, rows * h * 2));
    KV_CUDA(cudaMalloc(&gu_, rows * 2 * inter * 2));
    KV_CUDA(cudaMalloc(&act_, rows * inter * 2));
    // Attention scratch for the larger of the two uses: decode (seqs sequences,
    // contexts up to capacity) and prefill (capacity one-token queries).
    PagedAttention probe;
    probe.heads = s.heads;
    probe.kv_heads = s.kv_heads;
    probe.head_dim = s.head_dim;
    probe.max_context = capacity;
    attn_ws_bytes_ = 0;
    for (int queries : {seqs, capacity}) {
        probe.seqs = queries;
        attn_ws_bytes_ = std::max(attn_ws_bytes_, paged_attention_workspace_bytes(probe, paged_attention_splits(probe, sms_)));
    }
    KV_CUDA(cudaMalloc(&attn_ws_, attn_ws_bytes_));
    KV_CUDA(cudaStreamSynchronize(stream_));
}

GpuModel::~GpuModel() {
    auto release = [](void* p) {
        if (p) cudaFree(p);
    };
    for (auto* p : wqkv_) release(p);
    for (auto* p : wo_) release(p);
    for (auto* p : wgu_) release(p);
    for (auto* p : wdown_) release(p);
    for (auto* p : kcache_) release(p);
    for (auto* p : vcache_) release(p);
    for (void* p : {static_cast<void*>(norm_), static_cast<void*>(block_table_), static_cast<void*>(context_lens_), static_cast<void*>(prefill_table_),
                    static_cast<void*>(prefill_lens_), static_cast<void*>(x_), static_cast<void*>(h_), static_cast<void*>(qkv_), static_cast<void*>(q_),
                    static_cast<void*>(attn_), static_cast<void*>(out_), static_cast<void*>(gu_), static_cast<void*>(act_), static_cast<void*>(attn_ws_),
                    blas_workspace_})
        release(p);
    if (blas_) cublasDestroy(blas_);
    if (stream_) cudaStreamDestroy(stream_);
}

void GpuModel::run_layers(int rows, int context, bool prefill, int component) {
    const int q = s_.heads * s_.head_dim, k = s_.kv_heads * s_.head_dim, h = s_.hidden, inter = s_.intermediate;
    const float one = 1.0f, zero = 0.0f;
    // y[rows][out] = x[rows][in] . W^T with W stored [out][in] row-major (column-major [in][out]).
    auto gemm = [&](const __nv_bfloat16* w, int out, int in, const __nv_bfloat16* x, __nv_bfloat16* y) {
        KV_CUBLAS(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, &one, w, CUDA_R_16BF, in, x, CUDA_R_16BF, in, &zero, y, CUDA_R_16BF,
                               out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    auto want = [&](int c) { return component == kAll || component == c; };
    const std::size_t hidden_elems = static_cast<std::size_t>(rows) * h;
    for (int l = 0; l < sampled_; ++l) {
        if (want(kOther)) rmsnorm_kernel<<<rows, 256, 0, stream_>>>(x_, norm_, h_, h);
        if (want(kQkv)) gemm(wqkv_[l], q + 2 * k, h, h_, qkv_);
        if (want(kAttention)) {
            const dim3 grid(rows, s_.heads + 2 * s_.kv_heads);
            const int* table = prefill ? prefill_table_ : block_table_;
            if (kv_ == KvType::Bf16)
                rope_append_kernel<__nv_bfloat16><<<grid, s_.head_dim / 2, 0, stream_>>>(
                    qkv_, q_, static_cast<__nv_bfloat16*>(kcache_[l]), static_cast<__nv_bfloat16*>(vcache_[l]), table, max_blocks_, s_.heads,
                    s_.kv_heads, s_.head_dim, 16, context, prefill);
            else
                rope_append_kernel<__nv_fp8_e4m3><<<grid, s_.head_dim / 2, 0, stream_>>>(
                    qkv_, q_, static_cast<__nv_fp8_e4m3*>(kcache_[l]), static_cast<__nv_fp8_e4m3*>(vcache_[l]), table, max_blocks_, s_.heads,
                    s_.kv_heads, s_.head_dim, 16, context, prefill);
            PagedAttention p;
            p.q = q_;
            p.k_cache = kcache_[l];
            p.v_cache = vcache_[l];
            p.block_table = table;
            p.context_lens = prefill ? prefill_lens_ : context_lens_;
            p.seqs = rows;
            p.heads = s_.heads;
            p.kv_heads = s_.kv_heads;
            p.head_dim = s_.head_dim;
            p.max_blocks = max_blocks_;
            p.max_context = prefill ? rows : context + 1;
            p.kv_type = kv_;
            p.out = attn_;
            const int splits = paged_attention_splits(p, sms_);
            if (paged_attention_workspace_bytes(p, splits) > attn_ws_bytes_) throw std::runtime_error("attention workspace too small");
            paged_attention(p, splits, attn_ws_, stream_);
        }
        if (want(kOProj)) gemm(wo_[l], h, q, attn_, out_);
        if (want(kOther)) {
            add_kernel<<<grid_for(hidden_elems), 256, 0, stream_>>>(x_, out_, hidden_elems);
            rmsnorm_kernel<<<rows, 256, 0, stream_>>>(x_, norm_, h_, h);
        }
        if (want(kMlp)) {
            gemm(wgu_[l], 2 * inter, h, h_, gu_);
            silu_mul_kernel<<<grid_for(static_cast<std::size_t>(rows) * inter), 256, 0, stream_>>>(gu_, act_, inter, rows);
            gemm(wdown_[l], h, inter, act_, out_);
        }
        if (want(kOther)) add_kernel<<<grid_for(hidden_elems), 256, 0, stream_>>>(x_, out_, hidden_elems);
    }
    KV_CUDA(cudaGetLastError());
}

double GpuModel::time_graph(int rows, int context, bool prefill, int component, int repeats) {
    if (!prefill) {
        std::vector<int> lens(static_cast<std::size_t>(seqs_), context + 1);
        KV_CUDA(cudaMemcpy(context_lens_, lens.data(), lens.size() * sizeof(int), cudaMemcpyHostToDevice));
    }
    return graph_median_ms([&] { run_layers(rows, context, prefill, component); }, stream_, repeats);
}

StepMs GpuModel::decode(int context, int repeats) {
    if (context < 0 || context + 1 > capacity_) throw std::invalid_argument("decode: context beyond the cache");
    StepMs t;
    t.total = time_graph(seqs_, context, false, kAll, repeats);
    t.qkv = time_graph(seqs_, context, false, kQkv, repeats);
    t.attention = time_graph(seqs_, context, false, kAttention, repeats);
    t.o_proj = time_graph(seqs_, context, false, kOProj, repeats);
    t.mlp = time_graph(seqs_, context, false, kMlp, repeats);
    t.other = time_graph(seqs_, context, false, kOther, repeats);
    return t;
}

StepMs GpuModel::prefill(int prompt, int repeats) {
    if (prompt < 1 || prompt > capacity_) throw std::invalid_argument("prefill: prompt beyond the cache");
    StepMs t;
    t.total = time_graph(prompt, 0, true, kAll, repeats);
    t.qkv = time_graph(prompt, 0, true, kQkv, repeats);
    t.attention = time_graph(prompt, 0, true, kAttention, repeats);
    t.o_proj = time_graph(prompt, 0, true, kOProj, repeats);
    t.mlp = time_graph(prompt, 0, true, kMlp, repeats);
    t.other = time_graph(prompt, 0, true, kOther, repeats);
    return t;
}

double GpuModel::gemm_flops(int tokens, int repeats) {
    tokens = std::min(tokens, std::max(seqs_, capacity_));
    const int h = s_.hidden, inter = s_.intermediate;
    const float one = 1.0f, zero = 0.0f;
    const double ms = graph_median_ms(
        [&] {
            for (int i = 0; i < 4; ++i)
                KV_CUBLAS(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, 2 * inter, tokens, h, &one, wgu_[0], CUDA_R_16BF, h, h_, CUDA_R_16BF, h, &zero,
                                       gu_, CUDA_R_16BF, 2 * inter, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        },
        stream_, repeats, 1);
    return 4.0 * 2.0 * 2.0 * inter * static_cast<double>(h) * tokens / (ms * 1e-3);
}

}  // namespace kvplan::gpu
