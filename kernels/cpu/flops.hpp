// The CPU kernels' own matrix-product rate: matvec() over `tokens` vectors at
// once, which reuses each weight row across them and is compute-bound. This
// is the FLOP/s the roofline should expect of these kernels, not the CPU's peak.
#pragma once

#include <cstdint>

#include "decode_kernels.hpp"
#include "thread_pool.hpp"
#include "timing.hpp"

namespace kvplan::kernels {

// FLOP/s of a rows x cols product over `tokens` vectors in `precision`;
// median (and the slowest and fastest) of `repeats` timed runs after one warm-up.
Spread measure_matmul_flops(ThreadPool& pool, std::int64_t rows, std::int64_t cols, std::int64_t tokens, Precision precision, int repeats);

}  // namespace kvplan::kernels
