// This host as `kvplan measure` reports it: its CPU's name, its memory, and
// how busy it is before anything is timed: the 1-minute load average from
// /proc/loadavg (proc(5)). When it exceeds the online cores, other work
// competes for them and the timings are not reliable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kvplan {

// The first field of /proc/loadavg's text ("3.52 2.10 1.75 4/512 12345");
// nullopt when it does not start with a non-negative number.
std::optional<double> parse_load_average(const std::string& text);

// A warning when the 1-minute load average read from `path` is above
// `cores`; nothing when it is not, or when the file cannot be read (not Linux).
std::optional<std::string> host_load_warning(const std::string& path, unsigned cores);

// /proc/cpuinfo's first "model name", or "unknown CPU".
std::string cpu_name();

// The machine's physical memory in bytes (sysconf); 0 when unknown.
std::int64_t physical_memory_bytes();

}  // namespace kvplan
