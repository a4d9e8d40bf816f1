// Collectives as the engine runs them (docs/collectives.md): the time of one
// all-reduce, all-gather or reduce-scatter of a message over a group of
// GPUs, from measured tables where the device has them (models/collectives.json,
// AIConfigurator's, Apache-2.0), else from its link family's fitted curve,
// else from the datasheet (the caller's analytic price).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/hardware.hpp"

namespace kvplan {

enum class CollectiveOp { AllReduce, AllGather, ReduceScatter };
const char* collective_op_name(CollectiveOp op);  // "all_reduce", "all_gather", "reduce_scatter"

// vLLM's TP all-reduce on one device at one GPU count, as measured under CUDA
// graphs: message bytes (ascending) and seconds.
struct AllreduceGrid {
    std::string device;   // kvplan's device id
    std::string engine;   // the engine whose all-reduce was measured ("vllm")
    std::string version;  // its release
    std::int64_t gpus = 2;
    std::vector<double> bytes, latency_s;
};

// latency + bytes / bandwidth, fitted on one device's NCCL table.
struct CollectiveFit {
    std::string device;
    CollectiveOp op = CollectiveOp::AllGather;
    std::string version;  // NCCL's
    std::int64_t gpus = 2;
    double latency_s = 0, bytes_per_s = 0;
};

// latency + bytes / (link_fraction x the device's datasheet link), fitted on
// a link family's devices: what a device without tables gets.
struct FamilyCurve {
    LinkFamily link = LinkFamily::Nvlink;
    CollectiveOp op = CollectiveOp::AllReduce;
    std::int64_t gpus = 2;
    double latency_s = 0, link_fraction = 0;
    std::string fitted_on;  // the devices
};

struct CollectiveTables {
    std::vector<AllreduceGrid> allreduce;
    std::vector<CollectiveFit> nccl;
    std::vector<FamilyCurve> families;
};

// Parses models/collectives.json (already parsed JSON); errors name `source`
// and the field (exit 65).
CollectiveTables parse_collectives(const nlohmann::json& value, const std::string& source);

// The price of one collective on one device at one GPU count.
struct CollectiveCurve {
    enum class Source { Datasheet, Measured, Family };
    Source source = Source::Datasheet;     // Datasheet: no table; the caller prices it (or fills fixed_s, bytes_per_s)
    std::vector<double> bytes, latency_s;  // a measured all-reduce: the grid
    double fixed_s = 0, bytes_per_s = 0;   // otherwise: latency + bytes / bandwidth (0: latency only)
    std::string label;                     // which source priced it, in words
    bool priced() const { return source != Source::Datasheet; }
    // Seconds for a message of `bytes`: the grid interpolated linearly in
    // bytes between measured sizes, the first size's time below it, the last
    // segment's slope above it.
    double time_s(double bytes) const;
};

// The curve of `op` over `gpus` GPUs of `gpu` under `engine` (a profile id):
// the measured all-reduce grid of that device, engine and GPU count; for
// all-gather and reduce-scatter the device's NCCL fit; else the family
// curve of the device's link at that GPU count; else Datasheet. All-reduce
// tables are vLLM's, so other engines get Datasheet for all-reduce.
CollectiveCurve collective_curve(const CollectiveTables& tables, const Gpu& gpu, CollectiveOp op, std::int64_t gpus, const std::string& engine);

}  // namespace kvplan
