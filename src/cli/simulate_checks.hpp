// What `kvplan simulate`'s flags may not combine, checked before any work:
// the layouts each feature is simulated in (pipelines, speculative
// decoding, P/D units, CPU offload) and what the device must say. The
// engine is the one the flags' ServeKnobs hold (parsed once, cli/sim_setup).
#pragma once

#include "cli/cmd_simulate.hpp"
#include "core/hardware.hpp"
#include "core/model/model_spec.hpp"
#include "core/plan/serve_knobs.hpp"
#include "core/speed/step_cost.hpp"

namespace kvplan {

// --pp: what concurrency --pp accepts (no more stages than layers), on a
// device whose interconnect times the stage sends, with vLLM's engine.
void check_pp(const SimulateOptions& o, const ServeKnobs& k, const ModelSpec& model, const Gpu& gpu);
// The layouts speculative decoding is simulated in: vLLM's engine, one
// pipeline stage, aggregated replicas.
void check_spec_flags(const SimulateOptions& o, const ServeKnobs& k);
// The flags a P/D run needs, and those it cannot take.
void check_disagg_flags(const SimulateOptions& o, const ServeKnobs& k);
// --cpu-offload's limits: vLLM's connector, one stage, prefix caching on.
void check_cpu_offload_flags(const SimulateOptions& o, const ServeKnobs& k);
// What the device must say for steps to be priced on it.
void check_device(const SimulateOptions& o, const Gpu& gpu, const Efficiency& efficiency);

}  // namespace kvplan
