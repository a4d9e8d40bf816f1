// The M/D/1 engine the SLO search's tests derive their answers from
// (slo_search_test.cpp, stability_test.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/sim/slo_search.hpp"
#include "core/sim/synthetic.hpp"

namespace kvplan::test {

// One sequence at a time, prompts of 100 tokens prefilled in one step (the
// budget is 8192) that also samples the first token, then 9 decode steps of
// 10 ms for the other 9 output tokens: every request is served in exactly
// 10 steps, S = 0.1 s, one after another, a single server with a constant
// service time. With Poisson arrivals that is the M/D/1 queue.
inline SearchEngine md1_engine() {
    SearchEngine e;
    e.vllm.num_gpu_blocks = 1000;
    e.vllm.block_size = 16;
    e.vllm.max_num_seqs = 1;
    e.vllm.max_num_batched_tokens = 8192;
    e.price = [](const std::vector<SeqWork>&) { return 0.01; };
    e.decode = [](std::int64_t, std::int64_t) -> std::optional<double> { return 0.01; };
    return e;
}

// Its traffic: Poisson arrivals at 1 req/s (rescaled by the search), seed
// 7, 100-token prompts and 10-token outputs.
inline SyntheticSpec md1_traffic(std::int64_t requests) {
    SyntheticSpec s;
    s.rate = 1;
    s.requests = requests;
    s.seed = 7;
    s.input.a = 100;
    s.output.a = 10;
    return s;
}

}  // namespace kvplan::test
