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

inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace kvplan::kernels
