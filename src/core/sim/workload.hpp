// The traffic a simulation replays: requests with an arrival time, a prompt
// and an output length, and optionally what their prompts share (block
// keys that drive prefix-cache hits). Traces (io/trace_reader) and the
// synthetic generators (sim/synthetic) both produce this.
#pragma once

#include <cstdint>
#include <vector>

#include "core/error.hpp"

namespace kvplan {

struct SimRequest {
    double arrival_s = 0;
    std::int64_t input_tokens = 0;
    std::int64_t output_tokens = 0;
    // Keys of the prompt's leading content blocks, each covering
    // `key_block_tokens` tokens (Mooncake's hash_ids cover 512); equal keys
    // at equal positions mean equal content. Empty: nothing shared.
    std::vector<std::uint64_t> content_keys;
    std::int64_t key_block_tokens = 0;
};

// The longest stretch of traffic a simulation replays, in seconds (about
// 116 days: BurstGPT's 121-day trace needs --time-scale). It keeps every
// simulated time and second count far inside a double's exact integers.
inline constexpr double kMaxReplaySeconds = 1e7;

struct Workload {
    std::vector<SimRequest> requests;  // sorted by arrival
    // Closed loop: this many clients, each sending its next request when its
    // last finishes (arrival_s then ignored). 0: open loop, arrivals as given.
    std::int64_t concurrency = 0;
};

// Every simulation entry point's check of its traffic: sorted arrivals
// within 0 to kMaxReplaySeconds. Throws Error(Usage).
inline void check_arrivals(const Workload& w) {
    for (std::size_t i = 1; i < w.requests.size(); ++i)
        if (w.requests[i].arrival_s < w.requests[i - 1].arrival_s) usage_error("simulate: arrivals must be sorted");
    if (!w.requests.empty() && !(w.requests.front().arrival_s >= 0 && w.requests.back().arrival_s <= kMaxReplaySeconds))
        usage_error("simulate: arrivals must lie within 0 to 10^7 s (116 days)");
}

}  // namespace kvplan
