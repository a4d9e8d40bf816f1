// Accelerators: the figures the planner needs from a datasheet (memory,
// bandwidth, peak FLOP/s, interconnect), read from the hardware database
// (models/gpus.json, sources in models/GPUS_SOURCES.md) after the caller has
// parsed it, or built from a bare memory size (--gpu-mem).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"

namespace kvplan {

// Dense (not 2:4 sparse) peak tensor throughput, TFLOP/s (int8: TOPS);
// nullopt where the device has no such path or no figure was published.
struct PeakTflops {
    std::optional<double> fp32, tf32, bf16, fp16, fp8, int8, fp4;
};

struct Gpu {
    std::string id;    // e.g. "h100-sxm"
    std::string name;  // e.g. "NVIDIA H100 SXM 80GB"
    std::string vendor;
    std::vector<std::string> aliases;
    // Total memory as the driver reports it (nvidia-smi "Total"); e.g.
    // 81,559 MiB for an H100 80GB, not 80 GB.
    std::int64_t memory_bytes = 0;
    std::string memory_source;
    // What the CUDA runtime reports as total (cudaMemGetInfo, torch's
    // total_memory, vLLM's total_gpu_memory), a little less than the driver's
    // figure; nullopt where no published log gives it.
    std::optional<std::int64_t> cuda_total_bytes;
    std::string cuda_total_source;
    std::string marketed_memory;             // e.g. "80 GB"
    std::string memory_technology;           // e.g. "HBM3", "GDDR6X", "LPDDR5": sets the batch-1 bandwidth efficiency
    std::int64_t bandwidth_bytes_per_s = 0;  // datasheet memory bandwidth
    std::string bandwidth_source;
    PeakTflops peak;
    std::string tflops_source;
    std::string interconnect;                   // e.g. "NVLink 4 (18 links)"
    std::int64_t interconnect_bytes_per_s = 0;  // per direction, what a ring all-reduce sees
    std::string interconnect_source;
    // The link between the device and host CPU memory, which KV-cache offload
    // to the CPU (vLLM's offloading connector, LMCache) moves blocks over:
    // "PCIe Gen5 x16", "NVLink-C2C" (Grace superchips), "unified memory"
    // (Apple: no separate link, 0 bytes). 0 / empty: unknown (a --gpu-file
    // device may leave it out).
    std::string host_link;
    std::int64_t host_link_bytes_per_s = 0;  // per direction, theoretical (PCIe Gen5 x16: 64 GB/s)
    std::string host_link_source;
    bool unified_memory = false;          // Apple silicon: shared with the CPU and the OS
    std::vector<std::string> unverified;  // fields no retrieved document confirmed
    bool from_database = true;            // false for a --gpu-mem device

    // The total an engine multiplies its memory fraction by: what CUDA
    // reports when known, else the driver's figure.
    std::int64_t engine_total_bytes() const { return cuda_total_bytes.value_or(memory_bytes); }
};

// The scale-up link a tensor-parallel all-reduce runs over, from the
// device's `interconnect` text: "NVLink 4 (18 links)" is NVLink; a part
// with only a PCIe slot or a two-GPU bridge is PCIe (its bridge joins
// pairs, not the 4 or 8 GPUs of a TP group); AMD's Infinity Fabric is XGMI.
enum class LinkFamily { None, Nvlink, Pcie, Xgmi, Roce, Ici };
LinkFamily link_family(const Gpu& gpu);
const char* link_family_name(LinkFamily link);
std::optional<LinkFamily> parse_link_family(const std::string& text);

// Parses the database's JSON (schema in docs/concurrency.md). `source` names
// the file in errors, which are data errors (exit 65).
std::vector<Gpu> parse_gpu_database(const nlohmann::json& db, const std::string& source);

// Looks up `id` by id or alias, ignoring case, spaces and underscores
// ("H100", "h100_sxm", "NVIDIA H100" all work). Throws Error(Usage) naming the
// closest ids when nothing matches, prefixed with `flag` (the flag or field
// that gave the id).
const Gpu& find_gpu(const std::vector<Gpu>& gpus, const std::string& id, const std::string& flag = "--gpu");

// A device known only by its memory (--gpu-mem): no bandwidth or FLOP/s.
Gpu gpu_from_memory(std::int64_t memory_bytes, const std::string& label);

// Peak dense TFLOP/s for math in `dtype` (int4 weights run int8 or fp16
// math: nullopt here), or nullopt when unknown.
std::optional<double> peak_tflops_for(const Gpu& gpu, Dtype dtype);

// GPUs on one scale-up link when a layout does not say: an NVL72 rack's 72
// (the database's interconnect says "NVL72"), else an HGX/DGX node's 8
// (docs/scale-out.md, "Nodes and NICs").
inline std::int64_t default_gpus_per_node(const std::string& interconnect) {
    return interconnect.find("NVL72") != std::string::npos ? 72 : 8;
}

}  // namespace kvplan
