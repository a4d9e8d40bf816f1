// What `kvplan measure` measures beside what the speed model predicts
// (printed by report/measure_report.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvplan {

// The slowest and fastest of the repeats behind a median, in the median's
// unit. Both 0 when not reported: a kvplan-gpu-bench result gives medians only.
struct RepeatRange {
    double min = 0;
    double max = 0;
    bool known() const { return max > 0; }
    // (max - min) / median: how far apart two runs of the same figure landed.
    double relative(double median) const { return (max - min) / median; }
};

struct MeasuredStep {
    std::int64_t batch = 1;
    std::int64_t tokens = 0;     // context (decode) or prompt (prefill)
    double predicted_s = 0;      // all the model's layers
    double measured_s = 0;       // all the model's layers, scaled from the sampled ones (median)
    RepeatRange measured_range;  // seconds, scaled like measured_s
    double bytes = 0;            // moved per step, all layers (predicted)
    // Measured seconds by component, all layers.
    double qkv_s = 0, attention_s = 0, o_proj_s = 0, mlp_s = 0, other_s = 0;
    // Bytes each component must move (weights, or the KV cache for attention), all layers.
    double qkv_bytes = 0, attention_bytes = 0, o_proj_bytes = 0, mlp_bytes = 0;
    double flops = 0;                          // predicted FLOPs of the step (prefill: reported as TFLOP/s)
    std::optional<double> engine_predicted_s;  // --engine: the speed profile's prediction on the database device
};

struct MeasureResult {
    std::string device;  // e.g. "cpu: AMD EPYC 7B13 (2 threads)"
    std::string model;
    std::string precision;  // of weights and KV cache
    std::int64_t layers_measured = 0;
    std::int64_t layers_total = 0;
    unsigned threads = 0;
    double read_bytes_per_s = 0, copy_bytes_per_s = 0, triad_bytes_per_s = 0;
    std::int64_t stream_array_bytes = 0;
    double flops_per_s = 0;  // the kernels' own matrix product rate
    RepeatRange read_range, copy_range, triad_range, flops_range;
    std::int64_t repeats = 0;  // timed runs behind each median
    std::vector<MeasuredStep> decode;
    std::vector<MeasuredStep> prefill;
    std::vector<std::string> notes;
    std::vector<std::string> warnings;  // why the timings may be unreliable (a loaded host)
    std::string engine;                 // --engine: the profile's name ("vLLM"); empty without it
    std::string engine_device;          // the database device it predicted for
};

}  // namespace kvplan
