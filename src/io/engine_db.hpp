// The bundled engine speed profiles (models/engines/*.json) and the
// interconnect latency table (models/interconnects.json), embedded in the
// binary at build time like the hardware database.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/speed/engine_profile.hpp"

namespace kvplan {

// Every bundled profile, by id, each holding the interconnect table. Parsed once.
const std::vector<EngineProfile>& bundled_engines();

// The profiles commands look up: the bundled ones, then the user file's
// (a profile with a bundled id replaces it).
const std::vector<EngineProfile>& known_engines();

// The user file for this run: `path`, or when it is empty the file
// KVPLAN_ENGINE_FILE names, or none. Throws Error(Usage) for a file that
// cannot be read and Error(Data) naming the file and field for bad content.
void use_engine_file(const std::string& path);

// The profile called `id` (`generic`, `vllm`, `llamacpp`, ...); throws
// Error(Usage) naming `flag` and the known ids otherwise.
const EngineProfile& find_engine(const std::string& flag, const std::string& id);

// The interconnect latency table.
const std::vector<LinkLatency>& bundled_link_latencies();
// models/interconnects.json all_to_all_latency: DeepEP's published dispatch and combine times.
const std::vector<AllToAllLatency>& bundled_all_to_all_latencies();
// models/interconnects.json nics, and one of them by id (Error(Usage)
// naming --nic and the ids when there is none).
const std::vector<Nic>& bundled_nics();
// models/collectives.json: the measured all-reduce, all-gather and reduce-scatter tables.
const std::shared_ptr<const CollectiveTables>& bundled_collectives();
const Nic& find_nic(const std::string& id);

}  // namespace kvplan
