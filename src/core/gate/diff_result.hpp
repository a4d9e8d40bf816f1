// What `kvplan diff` compares (printed by report/diff_report.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/gate/figures.hpp"

namespace kvplan {

struct DiffRow {
    std::string key;                             // e.g. "max_requests"; its unit is in the name
    std::string label;                           // e.g. "max requests at 4,096 tokens"
    std::string unit;                            // shown after the label, "weights per GPU (bytes)"; empty when the label says it
    std::optional<std::int64_t> context_tokens;  // for per-context rows
    FigureValue a, b;
    Better better = Better::Higher;
    bool bytes = false;  // exact bytes with GiB beside them (wide), GiB alone (fitted)
};

struct DiffResult {
    std::string label_a, label_b;  // "llama-3.1-8b (...) on NVIDIA H100 SXM 80GB (h100-sxm), KV dtype auto"
    std::string setting;           // what both share: "vLLM (V1 engine), TP 1, decode batch 1"
    std::vector<DiffRow> rows;
    std::vector<std::string> notes;
};

}  // namespace kvplan
