#include "decode_step.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

namespace kvplan::kernels {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::int64_t element_bytes(Precision p) {
    return p == Precision::F32 ? 4 : 2;
}

// Random values in [-scale, scale], stored in `p`; filled in parallel with a
// per-task seed so the content is the same whatever the thread count.
std::vector<std::uint8_t> random_tensor(ThreadPool& pool, std::int64_t elements, Precision p, float scale, std::uint32_t seed) {
    std::vector<std::uint8_t> out(static_cast<std::size_t>(elements * element_bytes(p)));
    constexpr std::int64_t kChunk = 1 << 16;
    pool.run(static_cast<std::size_t>((elements + kChunk - 1) / kChunk), [&](std::size_t c) {
        std::mt19937 rng(seed * 7919u + static_cast<std::uint32_t>(c));
        std::uniform_real_distribution<float> dist(-scale, scale);
        const std::int64_t begin = static_cast<std::int64_t>(c) * kChunk, end = std::min(elements, begin + kChunk);
        for (std::int64_t i = begin; i < end; ++i) {
            const float f = dist(rng);
            if (p == Precision::F32) std::memcpy(out.data() + i * 4, &f, 4);
            else {
                const std::uint16_t h = float_to_bf16(f);
                std::memcpy(out.data() + i * 2, &h, 2);
            }
        }
    });
    return out;
}

}  // namespace

CpuModel::CpuModel(ThreadPool& pool, const LayerShape& s, std::int64_t layers, std::int64_t batch, std::int64_t capacity, Precision precision,
                   std::vector<std::int64_t> windows)
    : pool_(pool), shape_(s), batch_(batch), capacity_(capacity), precision_(precision), windows_(std::move(windows)) {
    windows_.resize(static_cast<std::size_t>(std::max<std::int64_t>(layers, 0)), 0);
    if (layers < 1 || batch < 1 || capacity < 1 || s.heads % s.kv_heads != 0) throw std::invalid_argument("CpuModel: bad shape");
    const std::int64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
    // Weights scaled like a trained model's (about 1/sqrt(fan-in)), so activations stay finite over layers.
    const float in_scale = 1.0f / std::sqrt(static_cast<float>(s.hidden));
    const float down_scale = 1.0f / std::sqrt(static_cast<float>(s.intermediate));
    for (std::int64_t i = 0; i < layers; ++i) {
        Layer l;
        const std::uint32_t seed = static_cast<std::uint32_t>(i * 16 + 1);
        l.qkv = random_tensor(pool, (q + 2 * kv) * s.hidden, precision, in_scale, seed);
        l.o = random_tensor(pool, s.hidden * q, precision, 1.0f / std::sqrt(static_cast<float>(q)), seed + 1);
        if (s.gated) l.gate = random_tensor(pool, s.intermediate * s.hidden, precision, in_scale, seed + 2);
        l.up = random_tensor(pool, s.intermediate * s.hidden, precision, in_scale, seed + 3);
        l.down = random_tensor(pool, s.hidden * s.intermediate, precision, down_scale, seed + 4);
        l.norm1.assign(static_cast<std::size_t>(s.hidden), 1.0f);
        l.norm2.assign(static_cast<std::size_t>(s.hidden), 1.0f);
        // The cache starts as if `capacity` tokens had been written (random K and V).
        l.k = random_tensor(pool, batch * capacity * kv, precision, 1.0f, seed + 5);
        l.v = random_tensor(pool, batch * capacity * kv, precision, 1.0f, seed + 6);
        layers_.push_back(std::move(l));
    }
}

void CpuModel::store_kv(Layer& l, std::int64_t seq, std::int64_t position, const float* k, const float* v) {
    const std::int64_t kv = shape_.kv_heads * shape_.head_dim;
    const std::int64_t at = (seq * capacity_ + position) * kv;
    for (std::int64_t i = 0; i < kv; ++i) {
        if (precision_ == Precision::F32) {
            std::memcpy(l.k.data() + (at + i) * 4, &k[i], 4);
            std::memcpy(l.v.data() + (at + i) * 4, &v[i], 4);
        } else {
            const std::uint16_t hk = float_to_bf16(k[i]), hv = float_to_bf16(v[i]);
            std::memcpy(l.k.data() + (at + i) * 2, &hk, 2);
            std::memcpy(l.v.data() + (at + i) * 2, &hv, 2);
        }
    }
}

StepTimes CpuModel::decode(std::int64_t context) {
    if (context < 0 || context >= capacity_) throw std::invalid_argument("CpuModel::decode: context beyond the cache");
    return run(batch_, context, false);
}

StepTimes CpuModel::prefill(std::int64_t prompt) {
    if (prompt < 1 || prompt > capacity_) throw std::invalid_argument("CpuModel::prefill: prompt beyond the cache");
    return run(prompt, 0, true);
}

// `rows` activation rows: the batch's sequences (decode, one new token each at
// `first_position`) or the prompt's tokens (prefill of sequence 0).
StepTimes CpuModel::run(std::int64_t rows, std::int64_t first_position, bool prefill) {
    const LayerShape& s = shape_;
    const std::int64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim, qkv = q + 2 * kv;
    StepTimes t;
    if (static_cast<std::int64_t>(x_.size()) != rows * s.hidden) {
        x_.assign(static_cast<std::size_t>(rows * s.hidden), 0.0f);
        for (std::size_t i = 0; i < x_.size(); ++i) x_[i] = static_cast<float>((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    }
    std::vector<float> h(static_cast<std::size_t>(rows * s.hidden)), proj(static_cast<std::size_t>(rows * qkv)),
        attn(static_cast<std::size_t>(rows * q)), out(static_cast<std::size_t>(rows * s.hidden)),
        gate(static_cast<std::size_t>(rows * s.intermediate)), up(static_cast<std::size_t>(rows * s.intermediate)),
        qrows(static_cast<std::size_t>(rows * q));
    for (std::size_t li = 0; li < layers_.size(); ++li) {
        Layer& l = layers_[li];
        const std::int64_t window = windows_[li];
        auto start = Clock::now();
        rmsnorm(x_.data(), l.norm1.data(), s.hidden, rows, h.data());
        t.other_s += since(start);

        start = Clock::now();
        matvec(pool_, tensor(l.qkv), qkv, s.hidden, h.data(), rows, proj.data());
        t.qkv_s += since(start);

        // proj holds qkv rows of [q | k | v] per activation row: rotate, keep q, append k and v.
        start = Clock::now();
        for (std::int64_t r = 0; r < rows; ++r) {
            float* p = proj.data() + r * qkv;
            const std::int64_t position = prefill ? r : first_position;
            rope(p, s.heads, s.head_dim, position);
            rope(p + q, s.kv_heads, s.head_dim, position);
            std::copy(p, p + q, qrows.data() + r * q);
            store_kv(l, prefill ? 0 : r, position, p + q, p + q + kv);
        }
        t.other_s += since(start);

        start = Clock::now();
        // Attend to tokens [first, last] of each sequence: all of them, or the last `window`.
        auto attend = [&](std::int64_t seqs, std::int64_t last, const float* qs, float* outs) {
            const std::int64_t first = window > 0 ? std::max<std::int64_t>(0, last + 1 - window) : 0;
            const std::int64_t skip = first * kv * element_bytes(precision_);
            AttentionShape a{seqs, s.heads, s.kv_heads, s.head_dim, last + 1 - first, capacity_};
            attention_decode(pool_, a, qs, Tensor{precision_, l.k.data() + skip}, Tensor{precision_, l.v.data() + skip}, outs);
        };
        if (prefill) {
            // Causal: token r attends to tokens 0..r of sequence 0.
            for (std::int64_t r = 0; r < rows; ++r) attend(1, r, qrows.data() + r * q, attn.data() + r * q);
        } else {
            attend(rows, first_position, qrows.data(), attn.data());
        }
        t.attention_s += since(start);

        start = Clock::now();
        matvec(pool_, tensor(l.o), s.hidden, q, attn.data(), rows, out.data());
        t.o_proj_s += since(start);

        start = Clock::now();
        for (std::size_t i = 0; i < x_.size(); ++i) x_[i] += out[i];
        rmsnorm(x_.data(), l.norm2.data(), s.hidden, rows, h.data());
        t.other_s += since(start);

        start = Clock::now();
        if (s.gated) matvec(pool_, tensor(l.gate), s.intermediate, s.hidden, h.data(), rows, gate.data());
        matvec(pool_, tensor(l.up), s.intermediate, s.hidden, h.data(), rows, up.data());
        if (s.gated) silu_mul(gate.data(), up.data(), rows * s.intermediate);
        else
            for (std::size_t i = 0; i < up.size(); ++i) gate[i] = up[i] / (1.0f + std::exp(-up[i]));
        matvec(pool_, tensor(l.down), s.hidden, s.intermediate, gate.data(), rows, out.data());
        for (std::size_t i = 0; i < x_.size(); ++i) x_[i] += out[i];
        t.mlp_s += since(start);
    }
    return t;
}

}  // namespace kvplan::kernels
