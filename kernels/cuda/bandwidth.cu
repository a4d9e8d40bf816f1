#include "bandwidth.cuh"

#include <algorithm>
#include <vector>

#include "cuda_check.cuh"
#include "timing.cuh"

namespace kvplan::gpu {

namespace {

constexpr int kUnroll = 4;  // independent 16-byte loads in flight per thread

__global__ void read_kernel(const uint4* __restrict__ a, std::size_t n, unsigned* sink) {
    unsigned x = 0;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
        uint4 v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) v[u] = a[i + u * stride];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < n; i += stride) x ^= a[i].x ^ a[i].y ^ a[i].z ^ a[i].w;
    if (x == 0x9e3779b9u) *sink = x;  // keeps the loads; practically never taken
}

__global__ void copy_kernel(const uint4* __restrict__ a, uint4* __restrict__ b, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) b[i] = a[i];
}

}  // namespace

Bandwidth measure_bandwidth(std::size_t bytes, int repeats) {
    const std::size_t n = bytes / sizeof(uint4);
    uint4 *a = nullptr, *b = nullptr;
    unsigned* sink = nullptr;
    KV_CUDA(cudaMalloc(&a, n * sizeof(uint4)));
    KV_CUDA(cudaMalloc(&b, n * sizeof(uint4)));
    KV_CUDA(cudaMalloc(&sink, sizeof(unsigned)));
    KV_CUDA(cudaMemset(a, 1, n * sizeof(uint4)));
    int sms = 0;
    KV_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int blocks = sms * 8, threads = 256;
    Bandwidth out;
    out.buffer_bytes = n * sizeof(uint4);
    const double read_ms = median_ms([&] { read_kernel<<<blocks, threads>>>(a, n, sink); }, nullptr, repeats);
    const double copy_ms = median_ms([&] { copy_kernel<<<blocks, threads>>>(a, b, n); }, nullptr, repeats);
    KV_CUDA(cudaGetLastError());
    out.read_bytes_per_s = static_cast<double>(out.buffer_bytes) / (read_ms * 1e-3);
    out.copy_bytes_per_s = 2.0 * static_cast<double>(out.buffer_bytes) / (copy_ms * 1e-3);
    KV_CUDA(cudaFree(a));
    KV_CUDA(cudaFree(b));
    KV_CUDA(cudaFree(sink));
    return out;
}

}  // namespace kvplan::gpu
