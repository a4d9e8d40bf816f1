// Human units at the edge: kvplan computes in bytes and tokens, and only
// printers convert. Capacities print in binary units (KiB = 2^10 ... GiB =
// 2^30); decimal GB (10^9) is always spelled out as such.
#pragma once

#include <cstdint>
#include <string>

#include "core/digits.hpp"

namespace kvplan {

// group_digits(17179869184) -> "17,179,869,184" lives in core/digits.hpp.

// 17179869184 -> "16.00 GiB"; below 1 KiB -> "512 B"
std::string binary_size(std::int64_t bytes);

// 17179869184 -> "17.18 GB" (10^9)
std::string decimal_size(std::int64_t bytes);

// 8030261248 -> "8.03 B" (billions, for parameter counts)
std::string short_count(std::int64_t count);

}  // namespace kvplan
