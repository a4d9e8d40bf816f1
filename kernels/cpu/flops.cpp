#include "flops.hpp"

#include <vector>

#include "timing.hpp"

namespace kvplan::kernels {

Spread measure_matmul_flops(ThreadPool& pool, std::int64_t rows, std::int64_t cols, std::int64_t tokens, Precision precision, int repeats) {
    const std::int64_t element = precision == Precision::F32 ? 4 : 2;
    std::vector<float> x(static_cast<std::size_t>(tokens * cols), 0.01f), y(static_cast<std::size_t>(tokens * rows));
    std::vector<std::uint8_t> w(static_cast<std::size_t>(rows * cols * element), 0);
    const Tensor t{precision, w.data()};
    auto run = [&] { matvec(pool, t, rows, cols, x.data(), tokens, y.data()); };
    run();  // warm-up
    std::vector<double> times;
    for (int i = 0; i < std::max(1, repeats); ++i) times.push_back(seconds(run));
    return rate_spread(2.0 * static_cast<double>(rows * cols * tokens), times);
}

}  // namespace kvplan::kernels
