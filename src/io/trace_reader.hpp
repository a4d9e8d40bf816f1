// Request traces for `kvplan simulate`, read into a Workload:
//   azure     the Azure LLM inference trace CSV: TIMESTAMP,ContextTokens,GeneratedTokens,
//             timestamps as date-times ("2023-11-16 18:15:46.6805900")
//   mooncake  Mooncake's JSONL: timestamp (ms), input_length, output_length,
//             hash_ids (one per 512-token prompt block; they drive prefix-cache hits)
//   jsonl     one object per line: arrival_time (s, any epoch) and input_toks/output_toks
//             (or input_tokens/output_tokens, prompt_len/output_len), as vLLM's benchmark tools write
//   csv       arrival_s,input_tokens,output_tokens
//   timestamps  jsonl whose lines also hold the server's queued_ts, scheduled_ts,
//             first_token_ts and last_token_ts (s, any monotonic clock): the
//             measured latencies are kept (io/served_run_reader.hpp)
//   vllm-bench  `vllm bench serve --save-result --save-detailed`'s JSON document
// Arrivals are made relative to the first and must not go back in time.
// Errors name the file, the line and the field (exit 65).
#pragma once

#include <cstdint>
#include <istream>
#include <string>

#include "core/sim/served_run.hpp"
#include "core/sim/workload.hpp"

namespace kvplan {

struct TraceOptions {
    std::string format = "auto";  // auto|azure|mooncake|jsonl|csv|timestamps|vllm-bench
    double time_scale = 1.0;      // 2: replay twice as fast
    std::int64_t limit = 0;       // 0: every request
};

// `path` is a file, or the name of a bundled trace: azure-2023-conv or
// azure-2023-code (the Azure LLM inference traces, CC-BY-4.0, Patel et al.,
// "Splitwise", ISCA 2024).
Workload read_trace(const std::string& path, const TraceOptions& o);
// The same from a stream; `path` names it in errors (tests, fuzzing).
Workload read_trace_stream(std::istream& in, const std::string& path, const TraceOptions& o);
const char* bundled_trace_names();
// The run behind the trace: its workload and, for timestamps and vllm-bench
// traces, the measured latencies (none for the other formats); a timestamps
// trace's per-second log is read from timeseries.csv beside it when present.
ServedRun read_served_run(const std::string& path, const TraceOptions& o);
ServedRun read_served_run_stream(std::istream& in, const std::string& path, const TraceOptions& o);  // "azure-2023-conv, azure-2023-code"

}  // namespace kvplan
