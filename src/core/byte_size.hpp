// Memory sizes given on the command line. Every size flag takes an explicit
// unit: "80GB" is 80 x 10^9 bytes, "80GiB" is 80 x 2^30; a plain number means
// GiB ("--gpu-mem 80"), the unit engines and nvidia-smi think in.
#pragma once

#include <cstdint>
#include <string>

namespace kvplan {

// Parses `text` ("80", "80GiB", "81559MiB", "23.58GiB", "14.9888 GB", "0") into
// bytes, rounded to the nearest byte. Accepted units (case-insensitive): B,
// KB MB GB TB (10^3..10^12), KiB MiB GiB TiB (2^10..2^40). Throws
// Error(Usage) naming `flag` for anything else, for a negative size, and for
// a size beyond 1 PiB. `allow_zero`: whether 0 is a valid answer (an overhead
// may be zero, a GPU's memory may not).
std::int64_t parse_byte_size(const std::string& flag, const std::string& text, bool allow_zero);

}  // namespace kvplan
