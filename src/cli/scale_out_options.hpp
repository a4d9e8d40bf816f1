// The layout flags `concurrency` and `roofline` share (data-parallel
// attention, expert parallelism; docs/scale-out.md): one definition, so the
// two commands take the same names, ranges and help.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace kvplan {

// Options: any struct with dp, ep, enable_expert_parallel, redundant_experts,
// moe_dense_tp and moe_a2a_backend; `dp_help` says what --dp means there.
template <typename Options>
void add_scale_out_options(CLI::App& cmd, Options& o, const std::string& dp_help) {
    const auto ranks = CLI::Range(std::int64_t{1}, std::int64_t{4096});
    cmd.add_option("--dp", o.dp, dp_help)->check(ranks);
    cmd.add_option("--ep", o.ep, "expert-parallel GPUs (SGLang --ep; vLLM: always tp x dp)")->check(ranks);
    cmd.add_flag("--enable-expert-parallel", o.enable_expert_parallel, "vLLM: routed experts over EP = tp x dp GPUs");
    cmd.add_option("--redundant-experts", o.redundant_experts, "extra physical experts per MoE layer, as EPLB adds them")
        ->check(CLI::Range(std::int64_t{0}, std::int64_t{4096}));
    cmd.add_option("--moe-dense-tp-size", o.moe_dense_tp, "SGLang: TP of the dense MLP layers (1 or --tp; default --tp)")->check(ranks);
    cmd.add_option("--moe-a2a-backend", o.moe_a2a_backend, "SGLang: none|deepep (deepep: EP = tp, shared experts on every GPU)")
        ->check(CLI::IsMember({"none", "deepep"}));
}

}  // namespace kvplan
