#include "stream.hpp"

#include <algorithm>
#include <vector>

#include "timing.hpp"

namespace kvplan::kernels {

StreamResult measure_stream(ThreadPool& pool, std::size_t array_bytes, int repeats) {
    const std::size_t n = std::max<std::size_t>(array_bytes / sizeof(double), 1024);
    const std::size_t parts = pool.size() * 4;
    const std::size_t chunk = (n + parts - 1) / parts;
    // First touch in parallel, so pages land near the threads that use them.
    std::vector<double> a, b, c;
    a.resize(n);
    b.resize(n);
    c.resize(n);
    pool.run(parts, [&](std::size_t p) {
        for (std::size_t i = p * chunk; i < std::min(n, (p + 1) * chunk); ++i) {
            a[i] = 1.0;
            b[i] = 2.0;
            c[i] = 0.5;
        }
    });
    std::vector<double> sums(parts);
    auto read = [&] {
        pool.run(parts, [&](std::size_t p) {
            double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            const std::size_t end = std::min(n, (p + 1) * chunk);
            std::size_t i = p * chunk;
            for (; i + 4 <= end; i += 4) {
                s0 += a[i];
                s1 += a[i + 1];
                s2 += a[i + 2];
                s3 += a[i + 3];
            }
            for (; i < end; ++i) s0 += a[i];
            sums[p] = s0 + s1 + s2 + s3;
        });
    };
    auto copy = [&] {
        pool.run(parts, [&](std::size_t p) {
            const std::size_t end = std::min(n, (p + 1) * chunk);
            std::copy(a.begin() + static_cast<std::ptrdiff_t>(std::min(n, p * chunk)), a.begin() + static_cast<std::ptrdiff_t>(end),
                      b.begin() + static_cast<std::ptrdiff_t>(std::min(n, p * chunk)));
        });
    };
    auto triad = [&] {
        pool.run(parts, [&](std::size_t p) {
            const std::size_t end = std::min(n, (p + 1) * chunk);
            for (std::size_t i = p * chunk; i < end; ++i) a[i] = b[i] + 3.0 * c[i];
        });
    };
    read();
    copy();
    triad();
    std::vector<double> tr, tc, tt;
    for (int r = 0; r < std::max(1, repeats); ++r) {
        tr.push_back(seconds(read));
        tc.push_back(seconds(copy));
        tt.push_back(seconds(triad));
    }
    StreamResult out;
    const double bytes = static_cast<double>(n * sizeof(double));
    out.read = rate_spread(bytes, tr);
    out.copy = rate_spread(2 * bytes, tc);
    out.triad = rate_spread(3 * bytes, tt);
    out.read_bytes_per_s = out.read.median;
    out.copy_bytes_per_s = out.copy.median;
    out.triad_bytes_per_s = out.triad.median;
    out.array_bytes = n * sizeof(double);
    out.threads = pool.size();
    out.repeats = std::max(1, repeats);
    // Keep the sums observable so the reads are not optimized away.
    double total = 0;
    for (double s : sums) total += s;
    if (total < 0) out.read_bytes_per_s = 0;
    return out;
}

}  // namespace kvplan::kernels
