// SHA-256 (FIPS 180-4), for the hash a baseline records of each model's
// config bytes, so that `kvplan check` can say the config changed. Small and
// dependency-free; tests/io/sha256_test.cpp pins the FIPS 180-2 vectors.
#pragma once

#include <string>
#include <string_view>

namespace kvplan {

// The digest as 64 lowercase hex digits; sha256_hex("abc") == "ba7816bf...".
std::string sha256_hex(std::string_view bytes);

}  // namespace kvplan
