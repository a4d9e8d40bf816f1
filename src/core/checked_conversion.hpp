// Checked float-to-integer conversion. A static_cast of a double outside
// int64's range (or of NaN or infinity) is undefined behaviour: in practice
// INT64_MIN, from which a loop counting up to it never ends (issue 44's
// hangs). Every such conversion in the simulator goes through here and
// fails loudly instead.
#pragma once

#include <cstdint>
#include <string>

#include "core/error.hpp"

namespace kvplan {

// x truncated toward zero, as int64; OverflowError naming `what` when x is
// not finite or does not fit (|x| >= 2^63, which doubles represent exactly).
inline std::int64_t checked_trunc(double x, const char* what = "a count") {
    if (!(x > -0x1p63 && x < 0x1p63))
        throw OverflowError(std::string("arithmetic overflow converting ") + what + " to an integer (" + std::to_string(x) +
                            " is not finite or does not fit in 64 bits; are the inputs realistic?)");
    return static_cast<std::int64_t>(x);
}

}  // namespace kvplan
