// What `kvplan size` computes (printed by report/size_report.hpp).
#pragma once

#include <string>
#include <vector>

#include "core/memory/kv_size.hpp"
#include "core/model/model_spec.hpp"
#include "core/model/weights.hpp"

namespace kvplan {

struct SizeResult {
    const ModelSpec* model = nullptr;
    std::string model_label;  // e.g. "llama-3.1-8b (meta-llama/Llama-3.1-8B-Instruct)"
    KvSizing kv;
    WeightSizing weights;
    std::vector<std::string> warnings;  // about the request, not the model (e.g. a context beyond the model's)
};

}  // namespace kvplan
