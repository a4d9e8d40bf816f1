// What an engine holds on a GPU besides weights and the KV cache, estimated
// term by term when the user does not give --overhead. Each term carries its
// formula, the range it was measured in and the source; the derivation is in
// docs/concurrency.md ("Runtime overhead").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/memory/engine.hpp"
#include "core/model/model_spec.hpp"

namespace kvplan {

struct OverheadTerm {
    std::string name;            // e.g. "activation peak"
    std::int64_t bytes = 0;      // kvplan's estimate
    std::int64_t low_bytes = 0;  // the range it stands for
    std::int64_t high_bytes = 0;
    std::string basis;           // the formula with this model's numbers
    std::string source;          // where the formula and range come from
    // Whether the engine takes it out of the KV pool. SGLang keeps the
    // activation peak in the (1 - mem_fraction_static) headroom; vLLM
    // captures CUDA graphs after sizing the pool.
    bool in_pool = true;
};

struct OverheadInputs {
    Engine engine = Engine::Generic;
    std::int64_t tp = 1;
    std::int64_t max_batched_tokens = 8192;  // tokens in the profiling forward pass
    std::int64_t max_num_seqs = 1024;        // sequences the sampler is profiled with
};

std::vector<OverheadTerm> estimate_overhead(const ModelSpec& spec, const OverheadInputs& in);

// Widest per-token MLP activation of a layer on one rank: the dense
// intermediate size, or for MoE the routed experts' intermediate x experts
// per token (+ shared experts), divided by TP.
std::int64_t activation_width(const ModelSpec& spec, std::int64_t tp);

}  // namespace kvplan
