#include "cli/simulate_checks.hpp"

#include "core/error.hpp"
#include "core/memory/parallel.hpp"

namespace kvplan {

void check_pp(const SimulateOptions& o, const ServeKnobs& k, const ModelSpec& model, const Gpu& gpu) {
    if (k.sglang()) usage_error("--pp: SGLang's pipeline parallelism is not simulated; pass --engine vllm, or --pp 1");
    if (!gpu.from_database || gpu.interconnect_bytes_per_s <= 0)
        usage_error("--pp: " + gpu.name + " has no interconnect figure to time the sends between stages; pass --gpu ID (see `kvplan gpus`)");
    pipeline_stages(static_cast<std::int64_t>(model.layers.size()), o.pp);  // refuses more stages than layers
}

void check_spec_flags(const SimulateOptions& o, const ServeKnobs& k) {
    if (o.spec.method.empty()) {
        if (o.spec.tokens > 0 || !o.spec.acceptance.empty() || !o.spec.draft_model.empty())
            usage_error("--spec-tokens, --acceptance and --draft-model need --spec-method mtp|eagle|draft");
        return;
    }
    if (k.sglang()) usage_error("--spec-method: speculative decoding is simulated with vLLM's engine only; pass --engine vllm");
    if (o.pp > 1) usage_error("--spec-method: speculative decoding with pipeline parallelism is not simulated; pass --pp 1");
    if (o.prefill_replicas > 0 || o.decode_replicas > 0)
        usage_error("--spec-method: speculative decoding in disaggregated pools is not simulated; drop --spec-method or the P/D flags");
}

void check_disagg_flags(const SimulateOptions& o, const ServeKnobs& k) {
    const bool pd = o.prefill_replicas > 0 || o.decode_replicas > 0;
    if (!pd) {
        if (!o.prefill_gpu.empty() || !o.decode_gpu.empty() || o.prefill_tp > 0 || o.decode_tp > 0 || o.prefill_dp > 0 || o.decode_dp > 0 ||
            o.layerwise_transfer || o.kv_link != "ib-ndr")
            usage_error(
                "--prefill-gpu, --prefill-tp, --prefill-dp, --decode-gpu, --decode-tp, --decode-dp, --kv-link and --layerwise-transfer "
                "need --prefill-replicas and --decode-replicas");
        return;
    }
    if (o.prefill_replicas == 0) usage_error("--decode-replicas needs --prefill-replicas (how many prefill instances)");
    if (o.decode_replicas == 0) usage_error("--prefill-replicas needs --decode-replicas (how many decode instances)");
    if (k.sglang()) usage_error("--prefill-replicas: disaggregated prefill/decode is simulated with vLLM's engine only; pass --engine vllm");
    if (o.pp > 1) usage_error("--prefill-replicas: pipeline parallelism in disaggregated pools is not simulated; pass --pp 1");
    if (o.replicas > 1) usage_error("--replicas: with --prefill-replicas and --decode-replicas the pools set the replicas; drop --replicas");
    if (!o.cpu_offload.empty()) usage_error("--cpu-offload: KV offload in disaggregated pools is not simulated; drop --cpu-offload or the P/D flags");
    // Each pool's layout has its own GPU count: --gpus-per-node and --nic place both.
    if (o.nodes.nodes > 0) usage_error("--nodes: each P/D pool spans its own nodes; pass --gpus-per-node (and --nic) instead");
}

void check_cpu_offload_flags(const SimulateOptions& o, const ServeKnobs& k) {
    if (o.cpu_offload.empty()) return;
    if (k.sglang()) usage_error("--cpu-offload: vLLM's OffloadingConnector is simulated, not SGLang's hierarchical cache; pass --engine vllm");
    if (o.pp > 1) usage_error("--cpu-offload: KV offload with pipeline parallelism is not simulated; pass --pp 1");
    if (o.no_prefix_caching) usage_error("--cpu-offload: the CPU tier is keyed by prefix-cache block hashes; drop --no-prefix-caching");
}

void check_device(const SimulateOptions& o, const Gpu& gpu, const Efficiency& efficiency) {
    // A device known only by its memory is priced from what `measure` timed on it.
    if (!gpu.from_database && !(efficiency.measured_bandwidth_bytes_per_s && efficiency.measured_flops_per_s))
        usage_error(
            "simulate prices steps with the device's bandwidth and FLOP/s: pass --gpu ID (see `kvplan gpus`), or --gpu-mem SIZE "
            "with --calibration FILE from `kvplan measure` holding both");
    if (!gpu.from_database && o.tp > 1) usage_error("--tp: a device given by --gpu-mem has no interconnect figure; pass --gpu ID");
}

}  // namespace kvplan
