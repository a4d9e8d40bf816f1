// The bundled engine speed profiles (models/engines/*.json) and the
// interconnect latency table (models/interconnects.json), embedded in the
// binary at build time like the hardware database.
#pragma once

#include <string>
#include <vector>

#include "core/speed/engine_profile.hpp"

namespace kvplan {

// Every bundled profile, by id, each holding the interconnect table. Parsed once.
const std::vector<EngineProfile>& bundled_engines();

// The profile called `id` (`generic`, `vllm`, `llamacpp`, ...); throws
// Error(Usage) naming `flag` and the known ids otherwise.
const EngineProfile& find_engine(const std::string& flag, const std::string& id);

// The interconnect latency table.
const std::vector<LinkLatency>& bundled_link_latencies();

}  // namespace kvplan
