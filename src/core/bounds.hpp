// The plausible floor and ceiling of every physical quantity that enters
// kvplan from a file (device, engine profile, calibration) or a flag. A
// figure outside its row is refused with the field named: a bandwidth of
// 1 B/s or an efficiency of 1e-300 is in "> 0" but prices steps at years
// (issue 44, class 3). docs/errors.md prints this table; a test keeps the two
// equal.
#pragma once

#include <string>
#include <vector>

namespace kvplan {

enum class Quantity {
    DeviceMemory,        // a device's memory, bytes
    MemoryBandwidth,     // a datasheet memory bandwidth, bytes/s
    PeakTflops,          // a datasheet dense peak, TFLOP/s
    LinkBandwidth,       // a GPU-GPU, host or KV link, bytes/s per direction
    MeasuredBandwidth,   // a calibration's measured memory bandwidth, bytes/s
    MeasuredFlops,       // a calibration's measured FLOP/s
    EfficiencyFraction,  // an achieved fraction of a datasheet figure
    EfficiencyFactor,    // a kernel or MoE speed factor relative to the model
    StepOverhead,        // a fixed time per step, seconds (0: none)
    CollectiveLatency,   // one collective's latency, seconds (0: none)
};

struct Bound {
    Quantity quantity;
    const char* name;  // what the table and messages call it
    const char* unit;
    double floor;    // inclusive
    double ceiling;  // inclusive
    const char* why;
};

// Every row, in the order docs/errors.md lists them.
const std::vector<Bound>& bounds_table();
const Bound& bound_of(Quantity q);

// Finite and within [floor, ceiling].
bool within_bounds(Quantity q, double value);

// "expected <name> in [floor, ceiling] <unit> (<why>), found <value>": the
// tail of a refusal; the caller names the file and field or the flag.
std::string bounds_refusal(Quantity q, double value);

// A number as the table prints it: 1e+09 as 1e9, 0.01 as 0.01.
std::string bound_number(double v);

}  // namespace kvplan
