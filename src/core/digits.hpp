// Digit grouping for the numbers kvplan writes into notes and formulas
// ("8,192 batched tokens"). In core because core builds those strings; the
// printers (io/units.hpp) use the same function.
#pragma once

#include <cstdint>
#include <string>

namespace kvplan {

// 17179869184 -> "17,179,869,184"
inline std::string group_digits(std::int64_t value) {
    const std::string digits = std::to_string(value < 0 ? -static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value));
    std::string out;
    int count = 0;
    for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
        if (count > 0 && count % 3 == 0) out.insert(out.begin(), ',');
        out.insert(out.begin(), *it);
        ++count;
    }
    return value < 0 ? "-" + out : out;
}

}  // namespace kvplan
