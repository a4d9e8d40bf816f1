// Renders `kvplan measure` results: measured beside predicted, the host's
// bandwidth, and the calibration JSON (which `kvplan roofline --calibration`
// reads back; schema in docs/measure.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvplan {

struct MeasuredStep {
    std::int64_t batch = 1;
    std::int64_t tokens = 0;   // context (decode) or prompt (prefill)
    double predicted_s = 0;    // all the model's layers
    double measured_s = 0;     // all the model's layers, scaled from the sampled ones
    double bytes = 0;          // moved per step, all layers (predicted)
    // Measured seconds by component, all layers.
    double qkv_s = 0, attention_s = 0, o_proj_s = 0, mlp_s = 0, other_s = 0;
    // Bytes each component must move (weights, or the KV cache for attention), all layers.
    double qkv_bytes = 0, attention_bytes = 0, o_proj_bytes = 0, mlp_bytes = 0;
    double flops = 0;          // predicted FLOPs of the step (prefill: reported as TFLOP/s)
};

struct MeasureResult {
    std::string device;        // e.g. "cpu: AMD EPYC 7B13 (2 threads)"
    std::string model;
    std::string precision;     // of weights and KV cache
    std::int64_t layers_measured = 0;
    std::int64_t layers_total = 0;
    unsigned threads = 0;
    double read_bytes_per_s = 0, copy_bytes_per_s = 0, triad_bytes_per_s = 0;
    std::int64_t stream_array_bytes = 0;
    double flops_per_s = 0;    // the kernels' own matrix product rate
    std::vector<MeasuredStep> decode;
    std::vector<MeasuredStep> prefill;
    std::vector<std::string> notes;
};

std::string render_measure_table(const MeasureResult& r);
// The calibration file: a valid `--calibration` input with the full results.
std::string render_measure_json(const MeasureResult& r);

}  // namespace kvplan
