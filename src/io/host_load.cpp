#include "io/host_load.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace kvplan {

std::optional<double> parse_load_average(const std::string& text) {
    std::istringstream in(text);
    double load = 0;
    if (!(in >> load) || !std::isfinite(load) || load < 0) return std::nullopt;
    return load;
}

std::optional<std::string> host_load_warning(const std::string& path, unsigned cores) {
    std::ifstream in(path);
    std::string line;
    if (!in || !std::getline(in, line)) return std::nullopt;
    const std::optional<double> load = parse_load_average(line);
    if (!load || cores == 0 || *load <= static_cast<double>(cores)) return std::nullopt;
    return fmt::format("the 1-minute load average ({:.2f}, {}) is above this host's {} online cores: other work shares them, so these "
                       "timings are unreliable",
                       *load, path, cores);
}

}  // namespace kvplan
