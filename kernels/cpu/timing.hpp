// Wall-clock timing for the CPU benchmarks: seconds for one call, the median
// of several (what every figure reports) and their spread (how far one run
// strayed from it, so a noisy host shows in the output).
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

// A rate over repeats: the median, and the slowest and fastest runs.
struct Spread {
    double median = 0;
    double min = 0;
    double max = 0;
};

// `work` (bytes or FLOPs) done once per run, over each run's `seconds`.
inline Spread rate_spread(double work, const std::vector<double>& seconds) {
    const auto [fastest, slowest] = std::minmax_element(seconds.begin(), seconds.end());
    return {work / median(seconds), work / *slowest, work / *fastest};
}

}  // namespace kvplan::kernels
