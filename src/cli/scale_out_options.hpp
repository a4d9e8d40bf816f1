// The layout flags `concurrency` and `roofline` share (data-parallel
// attention, expert parallelism; docs/scale-out.md): one definition, so the
// two commands take the same names, ranges and help.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "core/error.hpp"
#include "core/hardware.hpp"
#include "core/memory/parallel.hpp"
#include "core/plan/engine_setup.hpp"
#include "core/speed/step_cost.hpp"

namespace kvplan {

// Options: any struct with dp, ep, enable_expert_parallel, redundant_experts,
// moe_dense_tp, moe_a2a_backend and all2all_backend; `dp_help` says what --dp means there.
template <typename Options>
void add_scale_out_options(CLI::App& cmd, Options& o, const std::string& dp_help) {
    const auto ranks = CLI::Range(std::int64_t{1}, std::int64_t{4096});
    cmd.add_option("--dp", o.dp, dp_help)->check(ranks);
    cmd.add_option("--ep", o.ep, "expert-parallel GPUs (SGLang --ep, TensorRT-LLM moe_expert_parallel_size; vLLM: always tp x dp)")->check(ranks);
    cmd.add_flag("--enable-expert-parallel", o.enable_expert_parallel, "vLLM: routed experts over EP = tp x dp GPUs");
    cmd.add_option("--redundant-experts", o.redundant_experts, "extra physical experts per MoE layer, as EPLB adds them")
        ->check(CLI::Range(std::int64_t{0}, std::int64_t{4096}));
    cmd.add_option("--moe-dense-tp-size", o.moe_dense_tp, "SGLang: TP of the dense MLP layers (1 or --tp; default --tp)")->check(ranks);
    cmd.add_option("--moe-a2a-backend", o.moe_a2a_backend, "SGLang: none|deepep (deepep: EP = tp, shared experts on every GPU)")
        ->check(CLI::IsMember({"none", "deepep"}));
    cmd.add_option("--all2all-backend", o.all2all_backend,
                   "vLLM: allgather_reducescatter (default)|deepep_low_latency, the MoE dispatch under EP (docs/collectives.md)")
        ->check(CLI::IsMember({"allgather_reducescatter", "deepep_low_latency"}));
}

// The layout those flags give, as the memory wing reads it.
template <typename Options>
ScaleOutFlags layout_flags(const Options& o) {
    return ScaleOutFlags{o.tp, o.dp, o.ep, o.enable_expert_parallel, o.redundant_experts, o.moe_dense_tp, o.moe_a2a_backend, o.all2all_backend};
}

// --two-batch-overlap for the command's --engine (core/plan/engine_setup.hpp).
inline void add_two_batch_overlap(ExpertLayoutInputs* layout, const std::string& engine) {
    add_two_batch_overlap(layout, engine == "vllm" ? Engine::Vllm : engine == "sglang" ? Engine::Sglang : Engine::Generic);
}

// Where a layout's GPUs sit (docs/scale-out.md, "Nodes and NICs"): 0 = not given.
struct NodeFlags {
    std::int64_t nodes = 0;
    std::int64_t gpus_per_node = 0;
    std::string nic = "ib-ndr";
};

inline void add_node_options(CLI::App& cmd, NodeFlags& o) {
    const auto count = CLI::Range(std::int64_t{1}, std::int64_t{4096});
    cmd.add_option("--nodes", o.nodes, "nodes the layout's GPUs span (default: GPUs / --gpus-per-node, rounded up)")->check(count);
    cmd.add_option("--gpus-per-node", o.gpus_per_node, "GPUs on one scale-up link: 8 in an HGX node (default), 72 in an NVL72 rack (default there)")
        ->check(count);
    cmd.add_option("--nic", o.nic, "the NIC per GPU between nodes: ib-hdr, ib-ndr (default), ib-xdr, roce-400, efa-p5");
}

// GPUs per node from the flags (core/plan/engine_setup.hpp).
inline std::int64_t resolve_gpus_per_node(const NodeFlags& f, std::int64_t gpus, std::int64_t device_default) {
    return resolve_gpus_per_node(NodeKnobs{f.nodes, f.gpus_per_node, Nic{}, false}, gpus, device_default);
}

}  // namespace kvplan
