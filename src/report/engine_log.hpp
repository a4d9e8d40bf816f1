// What an engine prints at start-up for a capacity plan, in its own words:
// vLLM V1's "Available KV cache memory" / "GPU KV cache size" / "Maximum
// concurrency" lines (and the ValueError it raises when one max_model_len
// request does not fit), vLLM V0's block counts, SGLang's "KV Cache is
// allocated" and TensorRT-LLM's "Allocated ... for max tokens". The numbers
// come from the plan (CapacityPlan::engine_log); only the wording is here.
#pragma once

#include <string>
#include <vector>

#include "core/memory/capacity.hpp"

namespace kvplan {

// Empty when the plan's engine logs nothing kvplan models.
std::vector<std::string> engine_log_lines(const CapacityPlan& p);

}  // namespace kvplan
