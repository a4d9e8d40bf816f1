#include "core/byte_size.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "core/error.hpp"

namespace kvplan {

namespace {

struct Unit {
    std::string_view name;  // lower case
    double bytes;
};

constexpr Unit kUnits[] = {
    {"b", 1.0},         {"kb", 1e3},           {"mb", 1e6},
    {"gb", 1e9},        {"tb", 1e12},          {"kib", 1024.0},
    {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0},
};

constexpr double kMaxBytes = 1125899906842624.0;  // 1 PiB: no accelerator comes near it

}  // namespace

std::int64_t parse_byte_size(const std::string& flag, const std::string& text, bool allow_zero) {
    auto fail = [&](const std::string& why) -> std::int64_t {
        usage_error(flag + ": expected a size such as 80GB (10^9 bytes), 80GiB (2^30) or 80 (GiB), " + why);
    };
    // Split "<number><spaces><unit>".
    std::size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' || text[i] == '-' || text[i] == '+')) ++i;
    const std::string number = text.substr(0, i);
    while (i < text.size() && text[i] == ' ') ++i;
    std::string unit;
    for (; i < text.size(); ++i) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
    if (number.empty()) return fail("found \"" + text + "\"");

    char* end = nullptr;
    const double value = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size() || !std::isfinite(value)) return fail("found \"" + text + "\"");
    if (value < 0) return fail("found a negative size \"" + text + "\"");

    double scale = 0;
    if (unit.empty()) scale = 1073741824.0;  // a plain number is GiB
    for (const Unit& u : kUnits)
        if (unit == u.name) scale = u.bytes;
    if (scale == 0) return fail("found unknown unit \"" + unit + "\" in \"" + text + "\"");

    const double bytes = std::round(value * scale);
    if (bytes > kMaxBytes) return fail("found \"" + text + "\", more than 1 PiB");
    if (bytes == 0 && !allow_zero) return fail("found zero");
    return static_cast<std::int64_t>(bytes);
}

}  // namespace kvplan
