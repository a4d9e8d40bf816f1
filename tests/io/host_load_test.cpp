// io/host_load: /proc/loadavg's first field, and the warning `kvplan measure`
// prints when the host is busier than its cores.
#include "io/host_load.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <catch2/catch.hpp>

using namespace kvplan;

namespace {

std::string loadavg_file(const std::string& text) {
    const auto path = std::filesystem::temp_directory_path() / ("kvplan_loadavg_" + std::to_string(::getpid()));
    std::ofstream(path) << text;
    return path.string();
}

}  // namespace

TEST_CASE("the load average is the first field of /proc/loadavg") {
    CHECK(parse_load_average("3.52 2.10 1.75 4/512 12345\n") == 3.52);
    CHECK(parse_load_average("0.00 0.01 0.05 1/100 7") == 0.0);
    CHECK_FALSE(parse_load_average(""));
    CHECK_FALSE(parse_load_average("busy"));
    CHECK_FALSE(parse_load_average("-1 0 0"));
}

TEST_CASE("a load average above the online cores warns, one at or below them does not") {
    const std::string path = loadavg_file("4.50 3.00 2.00 5/300 999\n");
    const auto warning = host_load_warning(path, 2);
    REQUIRE(warning);
    CHECK_THAT(*warning, Catch::Contains("4.50") && Catch::Contains("2 online cores") && Catch::Contains("unreliable"));
    CHECK(warning->find('\n') == std::string::npos);
    CHECK_FALSE(host_load_warning(path, 8));
    const std::string at = loadavg_file("2.00 1.00 1.00 1/100 7\n");
    CHECK_FALSE(host_load_warning(at, 2));
    std::remove(path.c_str());
    CHECK_FALSE(host_load_warning("/nonexistent-kvplan-folder/loadavg", 2));
}
