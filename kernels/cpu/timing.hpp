// Wall-clock timing for the CPU benchmarks: seconds for one call, and the
// median of several (what every figure reports).
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace kvplan::kernels {

template <typename F>
double seconds(F&& f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The middle value; for an even count, the mean of the two middle values.
inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace kvplan::kernels
