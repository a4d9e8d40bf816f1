#include "core/units.hpp"

#include <catch2/catch.hpp>

using namespace kvplan;

TEST_CASE("digits are grouped in threes") {
    CHECK(group_digits(0) == "0");
    CHECK(group_digits(999) == "999");
    CHECK(group_digits(1000) == "1,000");
    CHECK(group_digits(17'179'869'184) == "17,179,869,184");
    CHECK(group_digits(-1234567) == "-1,234,567");
}

TEST_CASE("capacities print in binary units, GB only when asked for decimal") {
    CHECK(binary_size(512) == "512 B");
    CHECK(binary_size(131'072) == "128.00 KiB");
    CHECK(binary_size(1LL << 30) == "1.00 GiB");
    CHECK(decimal_size(1'000'000'000) == "1.00 GB");
    CHECK(decimal_size(1LL << 30) == "1.07 GB");
}
