// An engine's speed profile: how much of the datasheet an engine's kernels
// reach and what it pays per step, as data (models/engines/<id>.json,
// embedded in the binary) rather than code paths. The same GPU streams
// weights at about 0.45 of its datasheet bandwidth under llama.cpp's fp16
// kernels and about 0.8 under a torch.compile engine; the profile says which.
//
// Every fitted value names the measurements it was fitted on (`fitted_on`),
// all rows of tests/fixtures/reference/decode_measurements.jsonl; how they
// were fitted, and the leave-one-source-out errors, are in docs/accuracy.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "core/hardware.hpp"
#include "core/speed/collectives.hpp"

namespace kvplan {

// How a tensor-parallel all-reduce is done: NCCL's ring/tree, a custom
// one-shot kernel over peer-to-peer memory (vLLM's and TensorRT-LLM's
// custom all-reduce), or a fixed latency (the generic profile).
enum class AllreduceImpl { Fixed, Nccl, CustomOneShot };

// One published small-message all-reduce latency (models/interconnects.json).
struct LinkLatency {
    AllreduceImpl implementation = AllreduceImpl::Nccl;
    LinkFamily link = LinkFamily::Pcie;
    std::int64_t gpus = 2;
    double latency_s = 0;
    std::string source;
};

// The bundled table: parses models/interconnects.json (already parsed JSON);
// errors name `source` and the field (exit 65).
std::vector<LinkLatency> parse_link_latencies(const nlohmann::json& value, const std::string& source);

// The latency of one small all-reduce over `gpus` ranks joined by `link`
// with `impl`: the table's figure for that GPU count, else interpolated in
// log2(GPUs) between the nearest published counts (held flat beyond them).
// nullopt when the table has no figure for the pair.
std::optional<double> allreduce_latency(const std::vector<LinkLatency>& table, AllreduceImpl impl, LinkFamily link, std::int64_t gpus);

// One published latency of a mixture-of-experts all-to-all call
// (models/interconnects.json, all_to_all_latency): DeepEP's low-latency
// dispatch or combine of `tokens_per_rank` tokens over `gpus` EP ranks.
enum class AllToAllOp { Dispatch, Combine };
struct AllToAllLatency {
    std::string implementation;  // "deepep-low-latency"
    AllToAllOp op = AllToAllOp::Dispatch;
    std::int64_t gpus = 8;
    std::int64_t tokens_per_rank = 0;
    double latency_s = 0;
    std::string source;
};

// The all_to_all_latency entries of models/interconnects.json (already
// parsed JSON); errors name `source` and the field (exit 65).
std::vector<AllToAllLatency> parse_all_to_all_latencies(const nlohmann::json& value, const std::string& source);

// The latency of one `op` call over `gpus` EP ranks: the table's figure for
// that count, else interpolated in log2(GPUs) between the nearest published
// counts (held flat beyond them). nullopt when the table has none for `op`.
std::optional<double> all_to_all_latency(const std::vector<AllToAllLatency>& table, AllToAllOp op, std::int64_t gpus);

// A scale-out NIC, one per GPU (models/interconnects.json, nics): the line
// rate per direction that traffic between nodes crosses.
struct Nic {
    std::string id;  // "ib-ndr"
    std::string name;
    double bytes_per_s = 0;  // per direction, per GPU
    std::string source;
};

// The nics entries of models/interconnects.json (already parsed JSON);
// errors name `source` and the field (exit 65).
std::vector<Nic> parse_nics(const nlohmann::json& value, const std::string& source);

struct EngineProfile {
    std::string id = "generic";
    std::string name = "generic";
    std::string description;

    // Of datasheet bandwidth, streaming weights, by memory technology.
    double weights_hbm = 0.55, weights_gddr = 0.88, weights_lpddr = 0.80, weights_other = 0.85;
    double kv_fraction = 0.85;        // of datasheet bandwidth, reading and writing the KV cache
    double step_overhead_s = 0.0015;  // per step: scheduling, sampling, launches not captured in a graph
    double layer_overhead_s = 0;      // per decoder layer per step: kernel launches the engine pays each layer
    // Of the 16-bit weight stream, what each quantized format's kernels reach.
    std::map<std::string, double> kernel_factor = {{"gguf", 0.85}};
    double flops_16bit = 0.65, flops_fp8 = 0.45;  // of dense peak tensor FLOP/s, at large token counts
    // GEMM efficiency falls for small token counts: f x T / (T + prefill_half_tokens) for T tokens in a step.
    double prefill_half_tokens = 0;
    double moe_efficiency = 1.0;  // of the weight-stream bandwidth, for routed experts (grouped GEMMs)
    // Compute efficiency lost to tensor parallelism at large batch: FLOP/s / (1 + loss x log2(TP)).
    double tp_flops_loss = 0;
    double link_fraction = 1.0;  // of the datasheet link bandwidth, in all-reduces and pipeline sends
    AllreduceImpl allreduce = AllreduceImpl::Fixed;
    double fixed_allreduce_latency_s = 5e-6;  // AllreduceImpl::Fixed, or when the table has no figure
    // int4 formats as the engine stores them: bits of scale (and zero) per group, and whether the LM head is quantized.
    double int4_group_bits = 16;
    bool quantize_head = false;
    // What --kv-dtype auto means under this engine when the checkpoint's
    // quantization names no KV dtype: llama.cpp's --cache-type-k/-v default
    // f16. nullopt: the serving dtype (vLLM's rule, auto_kv_dtype).
    std::optional<Dtype> kv_cache_dtype;
    std::map<std::string, std::string> fitted_on;         // value name -> the rows it was fitted on
    std::vector<LinkLatency> links;                       // the interconnect table, bundled into the profile when loaded
    std::vector<AllToAllLatency> all_to_all;              // DeepEP's published all-to-all times, likewise
    std::vector<Nic> nics;                                // the NICs between nodes (models/interconnects.json nics), likewise
    std::shared_ptr<const CollectiveTables> collectives;  // models/collectives.json, likewise (null: datasheet prices only)

    double weights_fraction(const Gpu& gpu) const;
    double kernel(const std::string& family) const;
    // The all-reduce latency on `gpu` at `tp` ranks.
    double allreduce_latency_s(const Gpu& gpu, std::int64_t tp) const;
};

// The numbered values a fit may change, by the names the JSON file uses:
// "weights_fraction.hbm", "kv_fraction", "step_overhead_s", "kernel_factor.int4", ...
std::vector<std::string> profile_value_names();
// The value called `name` (one of profile_value_names(), "kernel_factor.<family>" for any family).
double& profile_value(EngineProfile& p, const std::string& name);
double profile_value(const EngineProfile& p, const std::string& name);

// Parses one models/engines/<id>.json (already parsed JSON; schema in
// docs/roofline.md, "Engine profiles"). Throws Error(Data) naming `source` and the field.
EngineProfile parse_engine_profile(const nlohmann::json& value, const std::string& source);

const char* allreduce_name(AllreduceImpl impl);

}  // namespace kvplan
