# Precompiled headers: `make run` builds kvplan in at most 90 s on 2 cores
# (issue 41). Measured (docs/ci.md, "Build time"): most of each file's compile
# is parsing nlohmann/json, fmt, CLI11 and the standard headers they pull in,
# once per file; precompiled, each library parses them once. The header sets
# follow the layers: core sees json only, io and report add fmt, cli adds
# CLI11. report reuses io's (same flags: both link fmt the same way).
# With ccache, set `sloppiness = pch_defines,time_macros` (docs/ci.md) or
# ccache compiles these files without caching them.
# Off by default until an end-to-end build time on an idle machine shows it
# pays and the clang (sanitize, fuzz) and portable builds are checked with it.
option(KVPLAN_PCH "precompile the heavy third-party headers (nlohmann/json, fmt, CLI11)" OFF)
if(KVPLAN_PCH)
  set(KVPLAN_PCH_STD <cmath> <filesystem> <limits> <optional> <set> <sstream>)
  target_precompile_headers(kvplan_core PRIVATE ${KVPLAN_PCH_STD} <nlohmann/json.hpp>)
  target_precompile_headers(kvplan_io PRIVATE ${KVPLAN_PCH_STD} <nlohmann/json.hpp> <fmt/format.h>)
  target_precompile_headers(kvplan_report REUSE_FROM kvplan_io)
  target_precompile_headers(kvplan_cli PRIVATE ${KVPLAN_PCH_STD} <nlohmann/json.hpp> <fmt/format.h> <CLI/CLI.hpp>)
endif()
