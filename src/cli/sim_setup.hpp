// What a simulation reads from flags, shared by `kvplan simulate` and
// `kvplan recommend`'s SLO search: the workload, the SLO, the KV link and
// the serving knobs; the engine they set up is core/plan/engine_setup.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli/cmd_simulate.hpp"
#include "cli/spec_options.hpp"
#include "core/hardware.hpp"
#include "core/plan/engine_setup.hpp"
#include "core/plan/serve_knobs.hpp"
#include "core/plan/simulation.hpp"
#include "core/sim/disagg.hpp"
#include "core/sim/synthetic.hpp"
#include "core/sim/metrics.hpp"
#include "core/sim/served_run.hpp"
#include "core/sim/synthetic.hpp"

namespace kvplan {

// fixed:N, uniform:A-B, lognormal:MEAN,SIGMA or from:TRACE; Error(Usage) naming `flag` otherwise.
LengthDist parse_dist(const std::string& flag, const std::string& text, bool input);
// "ttft=2s,tpot=50ms,e2e=30s".
Slo parse_slo(const std::string& text);
// The trace or the synthetic traffic the options name; `label` says which.
Workload make_workload(const SimulateOptions& o, std::string& label);
// The flags' synthetic traffic (rate, requests, lengths, burstiness, seed);
// make_workload checks they are complete first.
SyntheticSpec synthetic_spec(const SimulateOptions& o);
// --compare's run: the trace with its measured latencies; Error(Usage) when the
// trace holds none, or with flags that would change the workload it measured.
ServedRun read_compare_run(const SimulateOptions& o);
// The engine settings the flags give (engine, TP/PP, pool and scheduler
// limits, dtypes, release, CPU tier, layout, nodes), parsed once: the
// engine set-up (core/plan/engine_setup.hpp) reads no flag strings.
ServeKnobs serve_knobs(const SimulateOptions& o);

// --spec-method's proposer, resolved when the run asks (a draft model's
// config is read then); empty without --spec-method. Keeps references to
// `flags` and `model`. `simulate` and `recommend --slo` both resolve theirs here.
SpecResolver spec_resolver(const SpecFlags& flags, const ModelSpec& model);
// A P/D run's two sides (--prefill-gpu/-tp/-dp, --decode-gpu/-tp/-dp over
// --gpu/--tp/--dp) and the link between them (--kv-link).
PdUnit pd_unit(const SimulateOptions& o, const ModelSpec& model, const Efficiency& efficiency);

}  // namespace kvplan
