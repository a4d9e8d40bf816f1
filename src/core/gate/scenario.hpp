// One baseline scenario computed: the same sizing, capacity plan and
// roofline step that `kvplan size`, `concurrency` and `roofline` print, cut
// down to the figures a CI gate compares (core/figures.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/gate/baseline.hpp"
#include "core/hardware.hpp"
#include "core/memory/capacity.hpp"
#include "core/model/model_spec.hpp"
#include "core/speed/step_cost.hpp"

namespace kvplan {

struct ScenarioResult {
    Figures figures;
    // Context for people reading a diff; not gated.
    std::int64_t weights_bytes_per_gpu = 0;
    std::int64_t kv_pool_bytes_per_gpu = 0;
    std::int64_t model_weights_bytes = 0;
    std::optional<std::int64_t> smallest_tp;  // when nothing fits at this TP
    std::vector<std::string> warnings;
};

// The `kvplan concurrency` inputs a scenario stands for, at its one context;
// a weights_dtype as `profile`'s engine stores it (weight_format.hpp:
// linear layers in the format, embeddings and LM head as the engine leaves
// them), as concurrency and simulate size it.
CapacityInputs scenario_capacity_inputs(const Gpu& gpu, const ScenarioInputs& inputs, const EngineProfile& profile = {});

// `gpu` is the scenario's device, already looked up; `efficiency` the
// roofline's (its calibration already applied when the scenario names one).
// Throws Error(Usage) for a TP the model cannot be split by (e.g. after a
// config edit), as `kvplan concurrency` would.
ScenarioResult evaluate_scenario(const ModelSpec& model, const Gpu& gpu, const ScenarioInputs& inputs, const Efficiency& efficiency = {});

}  // namespace kvplan
