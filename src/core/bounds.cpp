#include "core/bounds.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace kvplan {

namespace {

// Floors and ceilings have a wide margin on both sides of every device and
// engine kvplan bundles (data/gpus.json, data/engines/): they refuse what no
// hardware does, not what is merely unusual.
const std::vector<Bound> kBounds = {
    {Quantity::DeviceMemory, "device memory", "bytes", 1e8, 1e14,
     "100 MB (an embedded board) to 100 TB; the largest single accelerators have about 0.3 TB"},
    {Quantity::MemoryBandwidth, "memory bandwidth", "bytes/s", 1e9, 1e14, "1 GB/s (an old DDR channel) to 100 TB/s; an HBM3e GPU has about 8 TB/s"},
    {Quantity::PeakTflops, "dense peak compute", "TFLOP/s", 0.01, 1e5, "10 GFLOP/s (a small CPU) to 100,000 TFLOP/s; a B200 has about 10,000 at fp4"},
    {Quantity::LinkBandwidth, "link bandwidth", "bytes/s", 1e8, 1e13, "0.1 GB/s (1 Gb Ethernet) to 10 TB/s; NVLink 5 is 0.9 TB/s per direction"},
    {Quantity::MeasuredBandwidth, "measured memory bandwidth", "bytes/s", 1e8, 1e14, "0.1 GB/s (one thread on a loaded host) to 100 TB/s"},
    {Quantity::MeasuredFlops, "measured compute", "FLOP/s", 1e8, 1e17, "0.1 GFLOP/s (one thread on a loaded host) to 100,000 TFLOP/s"},
    {Quantity::EfficiencyFraction, "efficiency fraction", "of the datasheet figure", 0.01, 1,
     "below 1% no engine runs; a datasheet figure is a ceiling"},
    {Quantity::EfficiencyFactor, "efficiency factor", "times", 0.01, 2,
     "a kernel or MoE factor: slower than 1% or faster than twice the model is a typo"},
    {Quantity::StepOverhead, "step overhead", "s", 0, 1, "0 (none) to 1 s; engines spend about 1 ms a step scheduling and launching"},
    {Quantity::CollectiveLatency, "collective latency", "s", 0, 0.01, "0 (none) to 10 ms; published NCCL and DeepEP latencies are 5 to 500 us"},
};

}  // namespace

const std::vector<Bound>& bounds_table() {
    return kBounds;
}

const Bound& bound_of(Quantity q) {
    for (const Bound& b : kBounds)
        if (b.quantity == q) return b;
    throw std::logic_error("no bound for a quantity");
}

bool within_bounds(Quantity q, double value) {
    const Bound& b = bound_of(q);
    return std::isfinite(value) && value >= b.floor && value <= b.ceiling;
}

std::string bound_number(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    std::string s = text;
    // %g writes 1e+09; the table and messages write 1e9.
    if (auto e = s.find("e+"); e != std::string::npos) {
        std::string exp = s.substr(e + 2);
        while (exp.size() > 1 && exp.front() == '0') exp.erase(0, 1);
        s = s.substr(0, e) + "e" + exp;
    } else if (auto m = s.find("e-"); m != std::string::npos) {
        std::string exp = s.substr(m + 2);
        while (exp.size() > 1 && exp.front() == '0') exp.erase(0, 1);
        s = s.substr(0, m) + "e-" + exp;
    }
    return s;
}

std::string bounds_refusal(Quantity q, double value) {
    const Bound& b = bound_of(q);
    return std::string("expected ") + b.name + " in [" + bound_number(b.floor) + ", " + bound_number(b.ceiling) + "] " + b.unit + " (" + b.why +
           "), found " + bound_number(value);
}

}  // namespace kvplan
