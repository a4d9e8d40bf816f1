// Size flags: "80GB" is 10^9-based, "80GiB" 2^30-based, a plain number GiB.
#include "core/byte_size.hpp"

#include <catch2/catch.hpp>

#include "core/error.hpp"

using namespace kvplan;

TEST_CASE("sizes take explicit units, a plain number is GiB") {
    CHECK(parse_byte_size("--gpu-mem", "80GB", false) == 80'000'000'000);
    CHECK(parse_byte_size("--gpu-mem", "80GiB", false) == 85'899'345'920);
    CHECK(parse_byte_size("--gpu-mem", "80", false) == 85'899'345'920);
    CHECK(parse_byte_size("--gpu-mem", "81559MiB", false) == 81'559LL * 1'048'576);
    CHECK(parse_byte_size("--weights", "14.9888 GB", false) == 14'988'800'000);
    CHECK(parse_byte_size("--kv-pool", "23.58gib", false) == 25'318'832'210);  // round(23.58 x 2^30)
    CHECK(parse_byte_size("--overhead", "0", true) == 0);
    CHECK(parse_byte_size("--overhead", "512 KiB", true) == 524'288);
    CHECK(parse_byte_size("--overhead", "1TB", true) == 1'000'000'000'000);
}

TEST_CASE("bad sizes are usage errors naming the flag") {
    for (const char* bad : {"", "GB", "-1GB", "80XB", "eighty", "1e400", "2000TiB", "80 G B"}) {
        INFO(bad);
        CHECK_THROWS_WITH(parse_byte_size("--gpu-mem", bad, false), Catch::Contains("--gpu-mem"));
    }
    CHECK_THROWS_WITH(parse_byte_size("--gpu-mem", "0GB", false), Catch::Contains("zero"));
    try {
        parse_byte_size("--weights", "-3", true);
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Usage);
        CHECK_THAT(e.what(), Catch::Contains("negative"));
    }
}
