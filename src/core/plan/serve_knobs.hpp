// How one engine is started for a simulation: the settings of `vllm serve`
// or SGLang's `launch_server` that shape its KV pool, its scheduler and its
// step, parsed once from the flags at the command line (src/cli) so that
// the set-up below compares enums and numbers, never flag strings. Both
// `simulate` and `recommend --slo` build one per engine they run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/memory/engine.hpp"
#include "core/memory/overhead.hpp"
#include "core/memory/parallel.hpp"
#include "core/model/weight_format.hpp"
#include "core/sim/cluster.hpp"
#include "core/sim/sglang_scheduler.hpp"
#include "core/speed/engine_profile.hpp"

namespace kvplan {

// Where a DP attention + EP layout's GPUs sit (docs/scale-out.md, "Nodes and
// NICs"); 0: not given.
struct NodeKnobs {
    std::int64_t nodes = 0;
    std::int64_t gpus_per_node = 0;
    Nic nic;                 // between nodes
    bool nic_given = false;  // --nic other than the default ib-ndr
};

struct ServeKnobs {
    Engine engine = Engine::Vllm;  // whose scheduler runs: Vllm or Sglang
    SglangPolicy policy = SglangPolicy::Fcfs;
    std::int64_t tp = 1;
    std::int64_t pp = 1;  // pipeline stages (vLLM's --pipeline-parallel-size)
    // 0: the engine's default, or the figure it computes.
    std::int64_t max_num_seqs = 0, max_num_batched_tokens = 0, long_prefill_threshold = 0;
    std::int64_t block_size = 0, num_gpu_blocks = 0, max_model_len = 0;
    double mem_util = 0;
    std::optional<VllmSampler> vllm_sampler;     // --vllm-version: the release whose start-up profile sizes the pool
    std::optional<Dtype> kv_dtype;               // nullopt: the model's (auto)
    WeightFormat weights;                        // the weights as the step reads them
    std::optional<WeightFormat> stored_weights;  // as the engine stores them (int4 groups); nullopt: the checkpoint as served
    bool prefix_caching = true;
    std::int64_t cpu_offload_bytes = 0;  // vLLM's --kv-offloading-size over all TP x PP ranks; 0: no CPU tier
    // DP attention + expert parallelism (vLLM's --data-parallel-size and
    // --enable-expert-parallel; SGLang's --dp --ep). layout.tp is `tp`.
    ScaleOutFlags layout;
    double expert_imbalance = 0;     // 0: not given (1.0)
    bool two_batch_overlap = false;  // vLLM --enable-dbo, SGLang --enable-two-batch-overlap
    NodeKnobs nodes;
    std::vector<AllToAllLatency> all_to_all;  // the measured all-to-all floors (models/interconnects.json)
    std::uint64_t seed = 0;                   // speculative decoding's acceptance draws
    bool sglang() const { return engine == Engine::Sglang; }
};

}  // namespace kvplan
