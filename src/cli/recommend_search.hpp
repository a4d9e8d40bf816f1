// `kvplan recommend --slo ... (--rate R | --trace FILE)`: the SLO capacity
// search on the simulator (core/sim/slo_search), over every GPU x TP x knob
// setting, with the fleet and its cost for the target traffic
// (docs/recommend.md).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cli/cmd_recommend.hpp"
#include "cli/command_output.hpp"
#include "core/hardware.hpp"

namespace kvplan {

// Exits 1 (with the report) when no candidate qualifies.
CommandOutput run_slo_search(const RecommendOptions& o, const std::vector<Gpu>& gpus, const std::map<std::string, double>& prices);

}  // namespace kvplan
