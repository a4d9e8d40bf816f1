#include "io/units.hpp"

#include <fmt/format.h>

namespace kvplan {

std::string binary_size(std::int64_t bytes) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while ((v >= 1024.0 || v <= -1024.0) && u < 6) {
        v /= 1024.0;
        ++u;
    }
    if (u == 0) return fmt::format("{} B", bytes);
    return fmt::format("{:.2f} {}", v, units[u]);
}

std::string decimal_size(std::int64_t bytes) {
    static const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while ((v >= 1000.0 || v <= -1000.0) && u < 6) {
        v /= 1000.0;
        ++u;
    }
    if (u == 0) return fmt::format("{} B", bytes);
    return fmt::format("{:.2f} {}", v, units[u]);
}

std::string short_count(std::int64_t count) {
    double v = static_cast<double>(count);
    if (v >= 1e9) return fmt::format("{:.2f} B", v / 1e9);
    if (v >= 1e6) return fmt::format("{:.2f} M", v / 1e6);
    if (v >= 1e3) return fmt::format("{:.2f} K", v / 1e3);
    return std::to_string(count);
}

}  // namespace kvplan
