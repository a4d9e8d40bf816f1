#include "reference.hpp"

#include <cmath>
#include <vector>

namespace kvplan::kernels::reference {

void matvec(const Tensor& w, std::int64_t rows, std::int64_t cols, const float* x, std::int64_t batch, float* y) {
    for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t r = 0; r < rows; ++r) {
            double s = 0;
            for (std::int64_t c = 0; c < cols; ++c) s += static_cast<double>(w.at(r * cols + c)) * x[b * cols + c];
            y[b * rows + r] = static_cast<float>(s);
        }
}

void attention_decode(const AttentionShape& s, const float* q, const Tensor& k, const Tensor& v, float* out) {
    const std::int64_t group = s.heads / s.kv_heads;
    for (std::int64_t b = 0; b < s.batch; ++b)
        for (std::int64_t h = 0; h < s.heads; ++h) {
            const std::int64_t g = h / group;
            std::vector<double> p(static_cast<std::size_t>(s.tokens));
            double mx = -1e300;
            for (std::int64_t t = 0; t < s.tokens; ++t) {
                double d = 0;
                for (std::int64_t i = 0; i < s.head_dim; ++i)
                    d += static_cast<double>(q[(b * s.heads + h) * s.head_dim + i]) * k.at(((b * s.capacity + t) * s.kv_heads + g) * s.head_dim + i);
                p[static_cast<std::size_t>(t)] = d / std::sqrt(static_cast<double>(s.head_dim));
                mx = std::max(mx, p[static_cast<std::size_t>(t)]);
            }
            double sum = 0;
            for (double& x : p) sum += (x = std::exp(x - mx));
            for (std::int64_t i = 0; i < s.head_dim; ++i) {
                double acc = 0;
                for (std::int64_t t = 0; t < s.tokens; ++t)
                    acc += p[static_cast<std::size_t>(t)] / sum * v.at(((b * s.capacity + t) * s.kv_heads + g) * s.head_dim + i);
                out[(b * s.heads + h) * s.head_dim + i] = static_cast<float>(acc);
            }
        }
}

}  // namespace kvplan::kernels::reference
