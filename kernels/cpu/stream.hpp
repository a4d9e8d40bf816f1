// STREAM-style memory bandwidth on the host (after McCalpin's STREAM): read,
// copy and triad over arrays many times the last-level cache, on every core.
// Bytes are counted as STREAM does (no write-allocate traffic).
#pragma once

#include <cstddef>

#include "thread_pool.hpp"
#include "timing.hpp"

namespace kvplan::kernels {

struct StreamResult {
    double read_bytes_per_s = 0;   // sum of a[] (what a decode step does to its weights)
    double copy_bytes_per_s = 0;   // b[] = a[]: 2 x 8 B per element
    double triad_bytes_per_s = 0;  // a[] = b[] + s x c[]: 3 x 8 B per element
    Spread read, copy, triad;      // the same figures with the slowest and fastest runs
    std::size_t array_bytes = 0;
    unsigned threads = 0;
    int repeats = 0;
};

// Median over `repeats` timed runs after one warm-up; `array_bytes` per array (three arrays).
StreamResult measure_stream(ThreadPool& pool, std::size_t array_bytes, int repeats);

}  // namespace kvplan::kernels
