// The memory budget of one GPU: what the engine may use, minus weights and
// runtime overhead, leaves the KV pool. Each engine applies its fraction to a
// different base (engine.hpp); the lines say which, in order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/memory/engine.hpp"
#include "core/memory/overhead.hpp"

namespace kvplan {

// One line of the budget as printed: "total memory", "x 0.90", "- weights"...
// A fraction line ('x') names the engine's flag in `label` and carries the
// fraction as a number; the printer writes it ("--gpu-memory-utilization 0.90").
struct BudgetLine {
    std::string label;
    std::int64_t bytes = 0;
    char op = ' ';                   // ' ' a starting figure, 'x' a fraction applied, '-' subtracted, '=' a result
    std::optional<double> fraction;  // 'x' lines: the fraction applied
    bool of_free_memory = false;     // 'x' lines: applied to what is free after loading (TensorRT-LLM)
};

struct BudgetInputs {
    Engine engine = Engine::Generic;
    std::int64_t total_bytes = 0;  // the memory the engine's fraction applies to
    double mem_fraction = 0.9;
    std::int64_t weights_bytes = 0;             // on this GPU
    std::vector<OverheadTerm> overhead;         // estimated terms, or one given term
    std::optional<std::int64_t> kv_pool_bytes;  // --kv-pool: replaces the arithmetic
};

struct MemoryBudget {
    Engine engine = Engine::Generic;
    std::int64_t total_bytes = 0;
    double mem_fraction = 0.9;
    std::int64_t usable_bytes = 0;  // what the fraction allows (vLLM's "requested memory")
    std::int64_t weights_bytes = 0;
    std::int64_t overhead_bytes = 0;  // terms the engine takes out of the pool
    std::vector<OverheadTerm> overhead;
    std::int64_t kv_pool_bytes = 0;  // may be negative: nothing fits
    bool kv_pool_given = false;
    std::vector<BudgetLine> lines;
};

// vLLM / generic: pool = total x f - weights - overhead (vllm/v1/worker/gpu_worker.py
// determine_available_memory). SGLang: pool = total x f - weights - non-torch
// (model_runner.profile_max_num_token: rest = free - total x (1 - f)).
// TensorRT-LLM: pool = f x (total - weights - overhead) (KvCacheConfig:
// "fraction of free GPU memory").
MemoryBudget make_budget(const BudgetInputs& in);

}  // namespace kvplan
