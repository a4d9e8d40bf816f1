// The GPU-hour prices `kvplan recommend --price-file FILE` ranks by
// (docs/recommend.md, "Prices"): a JSON object
//   {"source": "our cloud contract, 2026-11",
//    "usd_per_gpu_hour": {"h100-sxm": 2.5, "l4": 0.5}}
// with device ids (or aliases) as `kvplan gpus` lists them, each price a
// number in (0, 10^6) USD. `source` (optional) says where the prices come from.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/hardware.hpp"

namespace kvplan {

struct PriceFile {
    std::map<std::string, double> usd_per_gpu_hour;  // by canonical device id
    std::string source;                              // "" when the file names none
};

// Reads and checks `path`; Error(Usage) when it cannot be read, Error(Data)
// naming the file and the field for anything else (not JSON, an unknown
// device, a price out of range, an unknown key).
PriceFile read_price_file(const std::string& path, const std::vector<Gpu>& known);

}  // namespace kvplan
