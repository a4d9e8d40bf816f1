#include "core/units.hpp"

#include <cstdio>

namespace kvplan {

namespace {

// "{:.2f} {unit}": printf's %.2f rounds the exact binary value, as fmt does,
// so the text is the same as the printers' (core links no formatting library).
std::string two_places(double v, const char* unit) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f %s", v, unit);
    return buf;
}

}  // namespace

std::string binary_size(std::int64_t bytes) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while ((v >= 1024.0 || v <= -1024.0) && u < 6) {
        v /= 1024.0;
        ++u;
    }
    if (u == 0) return std::to_string(bytes) + " B";
    return two_places(v, units[u]);
}

std::string decimal_size(std::int64_t bytes) {
    static const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while ((v >= 1000.0 || v <= -1000.0) && u < 6) {
        v /= 1000.0;
        ++u;
    }
    if (u == 0) return std::to_string(bytes) + " B";
    return two_places(v, units[u]);
}

std::string short_count(std::int64_t count) {
    double v = static_cast<double>(count);
    if (v >= 1e9) return two_places(v / 1e9, "B");
    if (v >= 1e6) return two_places(v / 1e6, "M");
    if (v >= 1e3) return two_places(v / 1e3, "K");
    return std::to_string(count);
}

}  // namespace kvplan
