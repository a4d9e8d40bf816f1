// Naive single-threaded references for the CPU kernels, written for
// clarity, in double precision where it matters, and compared with the
// kernels in tests/kernels/cpu_kernels_test.cpp.
#pragma once

#include <cstdint>

#include "decode_kernels.hpp"

namespace kvplan::kernels::reference {

void matvec(const Tensor& w, std::int64_t rows, std::int64_t cols, const float* x, std::int64_t batch, float* y);
void attention_decode(const AttentionShape& s, const float* q, const Tensor& k, const Tensor& v, float* out);

}  // namespace kvplan::kernels::reference
