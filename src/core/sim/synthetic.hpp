// Synthetic traffic the way `vllm bench serve` makes it
// (vllm/benchmarks/serve.py, get_request): gamma-distributed gaps with
// shape = burstiness and scale = 1 / (rate x burstiness), so burstiness 1
// is a Poisson process; lengths drawn from a distribution per request.
#pragma once

#include <cstdint>
#include <vector>

#include "core/sim/workload.hpp"

namespace kvplan {

struct LengthDist {
    enum class Kind { Fixed, Uniform, Lognormal, Empirical } kind = Kind::Fixed;
    double a = 0, b = 0;               // fixed: a; uniform: [a, b]; lognormal: mean a, log-sigma b
    std::vector<std::int64_t> values;  // empirical: drawn with replacement
};

struct SyntheticSpec {
    double rate = 0;  // requests per second (open loop); 0 with concurrency > 0
    std::int64_t requests = 0;
    std::int64_t concurrency = 0;  // closed loop when > 0
    double burstiness = 1.0;
    std::uint64_t seed = 0;
    LengthDist input, output;
};

// Throws Error(Usage) for a spec that cannot be drawn (no requests, a rate
// of 0 in open loop, a distribution with no positive lengths).
Workload synthetic_workload(const SyntheticSpec& s);

// A system prompt of `tokens` tokens that every prompt begins with (a
// prompt shorter than it is all system prompt): `--prefix-tokens`. The
// tokens count inside each request's input length, so a trace's lengths
// stay what the trace says (vllm bench serve's --random-prefix-len adds
// them on top instead). Throws Error(Usage) when a request already carries
// content keys (a Mooncake trace says itself what its prompts share).
void share_system_prompt(Workload& w, std::int64_t tokens);

}  // namespace kvplan
