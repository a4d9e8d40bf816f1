// The traffic a simulation replays: requests with an arrival time, a prompt
// and an output length, and optionally what their prompts share (block
// keys that drive prefix-cache hits). Traces (io/trace_reader) and the
// synthetic generators (sim/synthetic) both produce this.
#pragma once

#include <cstdint>
#include <vector>

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
// 116 days: BurstGPT's 121-day trace needs --time-scale). The per-second
// series holds one point per simulated second, so this bounds its memory.
inline constexpr double kMaxReplaySeconds = 1e7;

struct Workload {
    std::vector<SimRequest> requests;  // sorted by arrival
    // Closed loop: this many clients, each sending its next request when its
    // last finishes (arrival_s then ignored). 0: open loop, arrivals as given.
    std::int64_t concurrency = 0;
};

}  // namespace kvplan
