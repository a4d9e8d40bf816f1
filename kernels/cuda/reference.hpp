// CPU references for the GPU kernels, in plain C++ (no CUDA headers), so the
// correctness check compares the GPU's results with arithmetic anyone can
// read. Cache bytes are decoded exactly as the GPU decodes them.
#pragma once

#include <cstdint>
#include <vector>

namespace kvplan::gpu::reference {

// bf16 (the top half of an fp32) and fp8 e4m3 (1 sign, 4 exponent bits with
// bias 7, 3 mantissa bits, no infinities, 0x7f/0xff NaN: the "fn" variant
// CUDA's __nv_fp8_e4m3 uses) to float.
float bf16_to_float(std::uint16_t h);
float fp8_e4m3_to_float(std::uint8_t b);

struct PagedCache {
    int heads = 0, kv_heads = 0, head_dim = 0, block_size = 16, max_blocks = 0;
    bool fp8 = false;
    float kv_scale = 1.0f;
    std::vector<std::uint8_t> k, v;       // raw cache bytes, [block][token][kv_head][dim]
    std::vector<int> block_table;         // [seq][max_blocks]
    std::vector<int> context_lens;        // [seq]
};

// out[s][h][d] for every sequence, from bf16 queries q[s][h][d]; double precision throughout.
std::vector<float> paged_attention(const PagedCache& c, const std::vector<std::uint16_t>& q);

}  // namespace kvplan::gpu::reference
