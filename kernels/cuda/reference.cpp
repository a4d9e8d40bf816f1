#include "reference.hpp"

#include <cmath>
#include <cstring>
#include <limits>

namespace kvplan::gpu::reference {

float bf16_to_float(std::uint16_t h) {
    const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

float fp8_e4m3_to_float(std::uint8_t b) {
    const int sign = b >> 7, exponent = (b >> 3) & 0xf, mantissa = b & 0x7;
    if (exponent == 0xf && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
    const float magnitude = exponent == 0 ? std::ldexp(static_cast<float>(mantissa) / 8.0f, -6)
                                          : std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
    return sign ? -magnitude : magnitude;
}

std::vector<float> paged_attention(const PagedCache& c, const std::vector<std::uint16_t>& q) {
    const int seqs = static_cast<int>(c.context_lens.size());
    const int group = c.heads / c.kv_heads;
    std::vector<float> out(static_cast<std::size_t>(seqs) * c.heads * c.head_dim);
    auto element = [&](const std::vector<std::uint8_t>& cache, std::size_t i) {
        if (c.fp8) return fp8_e4m3_to_float(cache[i]) * c.kv_scale;
        std::uint16_t h;
        std::memcpy(&h, cache.data() + 2 * i, 2);
        return bf16_to_float(h) * c.kv_scale;
    };
    for (int s = 0; s < seqs; ++s)
        for (int h = 0; h < c.heads; ++h) {
            const int g = h / group;
            const int len = c.context_lens[static_cast<std::size_t>(s)];
            std::vector<double> p(static_cast<std::size_t>(len));
            double mx = -1e300;
            for (int t = 0; t < len; ++t) {
                const int block = c.block_table[static_cast<std::size_t>(s) * c.max_blocks + t / c.block_size];
                const std::size_t row = (static_cast<std::size_t>(block) * c.block_size + t % c.block_size) * c.kv_heads + g;
                double dot = 0;
                for (int d = 0; d < c.head_dim; ++d)
                    dot += static_cast<double>(bf16_to_float(q[(static_cast<std::size_t>(s) * c.heads + h) * c.head_dim + d])) *
                           element(c.k, row * c.head_dim + d);
                p[static_cast<std::size_t>(t)] = dot / std::sqrt(static_cast<double>(c.head_dim));
                mx = std::max(mx, p[static_cast<std::size_t>(t)]);
            }
            double sum = 0;
            for (double& x : p) sum += (x = std::exp(x - mx));
            for (int d = 0; d < c.head_dim; ++d) {
                double acc = 0;
                for (int t = 0; t < len; ++t) {
                    const int block = c.block_table[static_cast<std::size_t>(s) * c.max_blocks + t / c.block_size];
                    const std::size_t row = (static_cast<std::size_t>(block) * c.block_size + t % c.block_size) * c.kv_heads + g;
                    acc += p[static_cast<std::size_t>(t)] / sum * element(c.v, row * c.head_dim + d);
                }
                out[(static_cast<std::size_t>(s) * c.heads + h) * c.head_dim + d] = static_cast<float>(acc);
            }
        }
    return out;
}

}  // namespace kvplan::gpu::reference
