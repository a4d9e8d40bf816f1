// Helpers the `kvplan simulate` end-to-end tests share: a trace written to a
// fresh temporary folder, and the check that a command is refused with one
// line naming what is wrong.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "test_support.hpp"

namespace kvplan::test {

// `text` as `name` in a new folder under the system's temporary directory.
inline std::string write_temp(const std::string& name, const std::string& text) {
    std::string templ = (std::filesystem::temp_directory_path() / "kvplan-sim-XXXXXX").string();
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    const std::string path = templ + "/" + name;
    std::ofstream(path) << text;
    return path;
}

// Exit 2, nothing on stdout, one line on stderr containing `names`.
inline void expect_usage_error(const std::vector<std::string>& args, const std::string& names) {
    const auto r = kvplan_run(args);
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(names) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

}  // namespace kvplan::test
