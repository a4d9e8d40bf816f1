#include "io/host_load.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include <unistd.h>

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
    return fmt::format(
        "the 1-minute load average ({:.2f}, {}) is above this host's {} online cores: other work shares them, so these "
        "timings are unreliable",
        *load, path, cores);
}

std::string cpu_name() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
        }
    return "unknown CPU";
}

std::int64_t physical_memory_bytes() {
    const long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGE_SIZE);
    return pages > 0 && size > 0 ? static_cast<std::int64_t>(pages) * size : 0;
}

}  // namespace kvplan
