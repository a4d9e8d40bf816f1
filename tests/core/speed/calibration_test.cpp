// core/speed/calibration: both schema versions of the file `kvplan measure
// --output` writes, and the message for a file from a newer kvplan.
#include "core/speed/calibration.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/error.hpp"

using namespace kvplan;

TEST_CASE("a schema 2 calibration reads its FLOP rate from measured_flop_per_s") {
    const nlohmann::json j = {{"schema_version", 2},
                              {"device", "cpu: test"},
                              {"measured_bandwidth_bytes_per_s", 1.2e10},
                              {"measured_flop_per_s", 2.2e10},
                              {"step_overhead_s", 0.0}};
    const Calibration c = parse_calibration(j, "host.json");
    CHECK(c.bandwidth_bytes_per_s == 1.2e10);
    REQUIRE(c.flops_per_s);
    CHECK(*c.flops_per_s == 2.2e10);
}

TEST_CASE("a schema 1 calibration, as kvplan measure wrote before unit-suffixed keys, still reads") {
    const nlohmann::json j = {{"schema_version", 1}, {"measured_bandwidth_bytes_per_s", 4.2e12}, {"measured_flops_per_s", 7.0e14}};
    const Calibration c = parse_calibration(j, "old.json");
    REQUIRE(c.flops_per_s);
    CHECK(*c.flops_per_s == 7.0e14);
}

TEST_CASE("a calibration with an unknown schema_version says to re-run measure") {
    const nlohmann::json j = {{"schema_version", 3}, {"measured_bandwidth_bytes_per_s", 4.2e12}};
    CHECK_THROWS_WITH(parse_calibration(j, "new.json"),
                      Catch::Contains("new.json") && Catch::Contains("schema_version") && Catch::Contains("re-run kvplan measure"));
}

TEST_CASE("a bad FLOP rate is named by the key its schema uses") {
    nlohmann::json j = {{"schema_version", 2}, {"measured_bandwidth_bytes_per_s", 4.2e12}, {"measured_flop_per_s", -1}};
    CHECK_THROWS_WITH(parse_calibration(j, "cal.json"), Catch::Contains("measured_flop_per_s"));
    j = {{"schema_version", 1}, {"measured_bandwidth_bytes_per_s", 4.2e12}, {"measured_flops_per_s", -1}};
    CHECK_THROWS_WITH(parse_calibration(j, "cal.json"), Catch::Contains("measured_flops_per_s"));
}
