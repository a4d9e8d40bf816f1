// What `kvplan roofline` computes (printed by report/roofline_report.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "core/model/model_spec.hpp"
#include "core/speed/roofline.hpp"

namespace kvplan {

struct RooflineResult {
    const ModelSpec* model = nullptr;
    std::string model_label;
    Gpu gpu;
    CostModel cost;
    Efficiency efficiency;
    RooflineInputs inputs;
    Roofline roofline;
    std::string weights_label;               // e.g. "bf16", "q4_k_m"
    std::int64_t weights_per_gpu_bytes = 0;  // with a DP/EP layout (stage_weights_scaled); 0: weights / TP
};

}  // namespace kvplan
