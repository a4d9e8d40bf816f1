// Checked integer arithmetic. Byte counts are products of up to seven config
// fields and user flags; a silent wrap would print a plausible wrong answer,
// so every product that can grow goes through these and fails loudly instead.
#pragma once

#include <cstdint>
#include <string>

#include "core/error.hpp"

namespace kvplan {

inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* what = "a size") {
    std::int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r))
        throw OverflowError(std::string("arithmetic overflow computing ") + what +
                            " (the result does not fit in 64 bits; are the inputs realistic?)");
    return r;
}

inline std::int64_t checked_add(std::int64_t a, std::int64_t b, const char* what = "a size") {
    std::int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r))
        throw OverflowError(std::string("arithmetic overflow computing ") + what +
                            " (the result does not fit in 64 bits; are the inputs realistic?)");
    return r;
}

// A 128-bit integer, for exact comparisons of products of two 64-bit values
// (tolerances x byte counts). A GCC/Clang extension; __extension__ keeps
// -Wpedantic quiet about it.
__extension__ typedef __int128 Int128;

// ceil(a / b) for positive b.
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
    return (a + b - 1) / b;
}

}  // namespace kvplan
