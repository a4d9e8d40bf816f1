// Device memory bandwidth: a read-only kernel and a copy kernel with 16-byte
// loads, several in flight per thread, over buffers many times the L2.
#pragma once

#include <cstddef>

namespace kvplan::gpu {

struct Bandwidth {
    double read_bytes_per_s = 0;
    double copy_bytes_per_s = 0;  // counts bytes read + bytes written
    std::size_t buffer_bytes = 0;
};

// Median of `repeats` timed launches (CUDA events) after a warm-up.
Bandwidth measure_bandwidth(std::size_t buffer_bytes, int repeats);

}  // namespace kvplan::gpu
