// What `kvplan concurrency` computes (printed by report/concurrency_report.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/memory/capacity.hpp"
#include "core/model/model_spec.hpp"

namespace kvplan {

// --cpu-offload SIZE: vLLM's CPU tier (OffloadingConnector, CPU spec) for the plan.
struct CpuTierSummary {
    std::string size;                 // as given, e.g. "64GiB"
    std::int64_t ranks = 1;           // TP x PP: vLLM splits the size over them
    std::int64_t blocks = 0;          // per rank
    std::int64_t tokens = 0;          // blocks x block size
    std::int64_t bytes_per_rank = 0;  // blocks x block bytes on one rank
};

// --nodes / --gpus-per-node: one replica's GPUs over nodes.
struct NodePlacement {
    std::int64_t nodes = 1;
    std::int64_t gpus_per_node = 1;
    bool tp_spans_nodes = false;  // attention TP wider than a node: its all-reduces cross the NIC
};

struct ConcurrencyResult {
    const ModelSpec* model = nullptr;
    std::string model_label;
    CapacityPlan plan;
    std::optional<CpuTierSummary> cpu_tier;
    std::optional<NodePlacement> placement;
};

}  // namespace kvplan
