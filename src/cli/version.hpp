// What `kvplan --version` prints. The version has one home, project(VERSION)
// in CMakeLists.txt; the build writes it, with the git commit the binary was
// built from, into a generated source (cmake/write_version.cmake).
#pragma once

#include <string>

namespace kvplan {

// The project version, e.g. "0.1.0".
const char* version();
// The commit, e.g. "ef2f876a1b2c" or "ef2f876a1b2c-dirty"; "" when the source
// was not a git checkout.
const char* build_commit();

// "kvplan 0.1.0 (commit ef2f876a1b2c)", or "kvplan 0.1.0" without a commit.
inline std::string version_line() {
    const std::string commit = build_commit();
    return std::string("kvplan ") + version() + (commit.empty() ? "" : " (commit " + commit + ")");
}

}  // namespace kvplan
