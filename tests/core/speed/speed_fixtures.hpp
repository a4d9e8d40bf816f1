// A device and efficiencies with round numbers, shared by the step-cost
// tests so that every figure in them can be derived by hand.
#pragma once

#include <cstdint>

#include "core/hardware.hpp"
#include "core/speed/step_cost.hpp"
#include "io/gpu_db.hpp"

namespace kvplan::test {

// A device with round numbers: 2 TB/s, 1,000 dense bf16 TFLOP/s, 100 GB/s links.
inline Gpu ideal_gpu() {
    Gpu g = gpu_from_memory(std::int64_t{80} << 30, "ideal");
    g.id = "ideal";
    g.bandwidth_bytes_per_s = 2'000'000'000'000;
    g.peak.bf16 = 1000;
    g.peak.fp16 = 1000;
    g.interconnect_bytes_per_s = 100'000'000'000;
    return g;
}

// Every fraction 1 and no fixed overhead: the pure roofline.
inline Efficiency pure() {
    Efficiency e;
    e.bandwidth_fraction = 1.0;
    e.weights_bandwidth_fraction = 1.0;
    e.flops_fraction = 1.0;
    e.step_overhead_s = 0;
    e.allreduce_latency_s = 0;
    return e;
}

}  // namespace kvplan::test
