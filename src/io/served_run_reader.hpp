// Served runs' own result files, read into a ServedRun (core/sim/served_run.hpp):
//   vllm-bench   `vllm bench serve --save-result --save-detailed`'s JSON: per request
//                input_lens, output_lens, ttfts, itls, start_times, errors; the run's
//                request_rate, max_concurrency, burstiness and duration
//   timestamps   a requests.jsonl whose lines hold the server's queued_ts,
//                scheduled_ts, first_token_ts and last_token_ts (trace_reader.cpp
//                reads the lines), with vLLM's per-second log beside it
//                (timeseries.csv: t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct)
// Errors name the file and the field (exit 65).
#pragma once

#include <istream>
#include <string>
#include <vector>

#include "core/sim/served_run.hpp"
#include "io/trace_reader.hpp"

namespace kvplan {

// The bench result's JSON document, whole; `path` names it in errors.
ServedRun read_vllm_bench(std::istream& in, const std::string& path, const TraceOptions& o);
// True when `prefix`, a trace's first bytes, is a JSON document rather than
// JSON lines: its first line is a lone "{" (an indented document), runs past
// the 64 KiB a trace line may hold, or is a whole object naming input_lens.
bool looks_like_vllm_bench(const std::string& prefix);
// vLLM's per-second log as LLMServingSim's timeseries.csv records it.
std::vector<MeasuredSecond> read_engine_series(const std::string& path);

}  // namespace kvplan
