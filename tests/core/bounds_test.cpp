// The bounds table (core/bounds.hpp): its rows hold what kvplan bundles, refuse
// the absurd figures, and docs/errors.md prints the same rows.
#include "core/bounds.hpp"

#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

using namespace kvplan;

TEST_CASE("bounds: every row has a floor below its ceiling and a reason", "[bounds]") {
    REQUIRE(bounds_table().size() == 10);
    for (const Bound& b : bounds_table()) {
        INFO(b.name);
        CHECK(b.floor >= 0);
        CHECK(b.floor < b.ceiling);
        CHECK(std::string(b.why).size() > 10);
        CHECK(&bound_of(b.quantity) == &b);
    }
}

TEST_CASE("bounds: the issue's absurd figures are out, published ones in", "[bounds]") {
    // H100 SXM: 3.35 TB/s (NVIDIA datasheet), 989 dense bf16 TFLOP/s, NVLink 4 450 GB/s per direction.
    CHECK(within_bounds(Quantity::MemoryBandwidth, 3.35e12));
    CHECK(within_bounds(Quantity::PeakTflops, 989));
    CHECK(within_bounds(Quantity::LinkBandwidth, 450e9));
    // Apple M1: 68.25 GB/s (Apple's 4266 MT/s LPDDR4X x 128 bits).
    CHECK(within_bounds(Quantity::MemoryBandwidth, 68.25e9));
    // Issue 44's examples: 1 B/s, 5e-324 TFLOP/s, an efficiency of 1e-300.
    CHECK_FALSE(within_bounds(Quantity::MemoryBandwidth, 1));
    CHECK_FALSE(within_bounds(Quantity::PeakTflops, 5e-324));
    CHECK_FALSE(within_bounds(Quantity::EfficiencyFraction, 1e-300));
    // The edges are in; NaN and infinity are out.
    CHECK(within_bounds(Quantity::EfficiencyFraction, 0.01));
    CHECK(within_bounds(Quantity::EfficiencyFraction, 1));
    CHECK_FALSE(within_bounds(Quantity::EfficiencyFraction, 1.0000001));
    CHECK(within_bounds(Quantity::StepOverhead, 0));
    CHECK_FALSE(within_bounds(Quantity::StepOverhead, std::numeric_limits<double>::quiet_NaN()));
    CHECK_FALSE(within_bounds(Quantity::MeasuredFlops, std::numeric_limits<double>::infinity()));
}

TEST_CASE("bounds: a refusal says the row's range, unit and reason", "[bounds]") {
    CHECK(bound_number(1e9) == "1e9");
    CHECK(bound_number(1e-7) == "1e-7");
    CHECK(bound_number(0.01) == "0.01");
    CHECK(bound_number(100000) == "100000");
    CHECK_THAT(bounds_refusal(Quantity::MemoryBandwidth, 1),
               Catch::StartsWith("expected memory bandwidth in [1e9, 1e14] bytes/s (") && Catch::EndsWith("), found 1"));
}

TEST_CASE("bounds: docs/errors.md prints every row of the table as the code has it", "[bounds]") {
    std::ifstream in(std::string(KVPLAN_SOURCE_DIR) + "/docs/errors.md");
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    for (const Bound& b : bounds_table()) {
        const std::string row =
            std::string("| ") + b.name + " | " + b.unit + " | " + bound_number(b.floor) + " | " + bound_number(b.ceiling) + " | " + b.why + " |";
        INFO(row);
        CHECK(text.str().find(row) != std::string::npos);
    }
}
