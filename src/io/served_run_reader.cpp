#include "io/served_run_reader.hpp"

#include <cmath>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/model/config_parts.hpp"

namespace kvplan {

namespace {

using nlohmann::json;

// A bench result holds a few numbers per token (itls) and the generated
// texts: about 100 MB for 10,000 requests of 500 tokens. A larger file is
// not one, and reading it whole could take the machine's memory.
constexpr std::size_t kMaxBenchBytes = std::size_t{1} << 30;
// The document is an object of lists of lists (itls): depth 3.
constexpr int kMaxBenchDepth = 4;

[[noreturn]] void fail(const std::string& path, const std::string& field, const std::string& what) {
    data_error(path + ": " + field + ": " + what);
}

json parse_document(std::istream& in, const std::string& path) {
    std::string text;
    char buffer[1 << 16];
    while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
        text.append(buffer, static_cast<std::size_t>(in.gcount()));
        if (text.size() > kMaxBenchBytes) data_error(path + ": over 1 GiB (a vllm bench serve result is a few numbers per token)");
    }
    try {
        return json::parse(text, [&](int depth, json::parse_event_t, json&) {
            if (depth > kMaxBenchDepth) data_error(path + ": JSON nested deeper than " + std::to_string(kMaxBenchDepth) + " levels");
            return true;
        });
    } catch (const json::exception&) {
        data_error(path + ": not a JSON document (expected vllm bench serve's --save-result JSON)");
    }
}

// A list of `n` entries (n < 0: any length), each checked by `item`.
const json& list(const std::string& path, const json& j, const char* field, std::int64_t n) {
    if (!j.contains(field)) fail(path, field, "missing (expected one entry per request: run vllm bench serve with --save-result --save-detailed)");
    const json& v = j[field];
    if (!v.is_array()) fail(path, field, "expected a list, one entry per request");
    if (n >= 0 && static_cast<std::int64_t>(v.size()) != n)
        fail(path, field, fmt::format("{} entries, expected {} (one per request, as input_lens)", v.size(), n));
    return v;
}

// A time in seconds: a finite number from 0 to 10^7 s (116 days, the longest replay).
double seconds(const std::string& path, const std::string& field, const json& v) {
    if (!v.is_number()) fail(path, field, "expected a time in seconds (a number)");
    const double s = v.get<double>();
    if (!std::isfinite(s) || s < 0 || s > kMaxReplaySeconds) fail(path, field, fmt::format("{:.6g} s: expected 0 to 10^7 s", s));
    return s;
}

std::int64_t tokens(const std::string& path, const std::string& field, const json& v, std::int64_t min) {
    if (!v.is_number_integer()) fail(path, field, "expected a whole number of tokens");
    const auto t = v.get<std::int64_t>();
    if (t < min || t > kMaxTokens) fail(path, field, fmt::format("{} tokens: expected {} to {}", t, min, kMaxTokens));
    return t;
}

// request_rate: a number of requests per second, or "inf" (vLLM writes
// float('inf') as the string, vllm/benchmarks/serve.py); 0 stands for inf.
double request_rate(const std::string& path, const json& j) {
    if (!j.contains("request_rate")) fail(path, "request_rate", "missing (expected a number or \"inf\")");
    const json& v = j["request_rate"];
    if (v.is_string() && v.get<std::string>() == "inf") return 0;
    if (!v.is_number() || !(v.get<double>() > 0) || !(v.get<double>() <= 1e9))
        fail(path, "request_rate", "expected requests per second (0 to 10^9) or \"inf\"");
    return v.get<double>();
}

std::int64_t max_concurrency(const std::string& path, const json& j) {
    if (!j.contains("max_concurrency") || j["max_concurrency"].is_null()) return 0;
    const json& v = j["max_concurrency"];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > 100'000'000)
        fail(path, "max_concurrency", "expected a whole number of clients from 1 to 10^8, or null");
    return v.get<std::int64_t>();
}

// One request's measured figures: TTFT from the request's send, E2E = TTFT
// plus every gap (vLLM's latency ends at the last chunk; its own E2E also
// counts the stream's close, tens of microseconds more).
MeasuredRequest measured(const std::string& path, const json& j, std::size_t i, std::int64_t output) {
    MeasuredRequest m;
    m.output_tokens = output;
    m.ttft_s = seconds(path, fmt::format("ttfts[{}]", i), j["ttfts"][i]);
    m.e2e_s = m.ttft_s;
    const json& gaps = j["itls"][i];
    if (!gaps.is_array()) fail(path, fmt::format("itls[{}]", i), "expected the request's list of gaps between chunks");
    for (std::size_t k = 0; k < gaps.size(); ++k) {
        m.itl_s.push_back(seconds(path, fmt::format("itls[{}][{}]", i, k), gaps[k]));
        m.e2e_s += m.itl_s.back();
    }
    if (m.e2e_s > kMaxReplaySeconds) fail(path, fmt::format("itls[{}]", i), "the gaps add up to over 10^7 s");
    return m;
}

bool failed(const std::string& path, const json& j, std::size_t i) {
    if (!j.contains("errors")) return false;
    const json& e = j["errors"][i];
    if (!e.is_string()) fail(path, fmt::format("errors[{}]", i), "expected a string (empty when the request succeeded)");
    return !e.get<std::string>().empty();
}

}  // namespace

bool looks_like_vllm_bench(const std::string& prefix) {
    const std::size_t start = prefix.find_first_not_of(" \t\r\n");
    if (start == std::string::npos || prefix[start] != '{') return false;
    const std::size_t end = prefix.find('\n', start);
    if (end == std::string::npos && prefix.size() >= (std::size_t{1} << 16)) return true;  // one long line: a document
    const std::string first = prefix.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (first.find_last_not_of(" \t\r") == 0) return true;  // an indented document's "{" line
    return json::accept(first) && first.find("\"input_lens\"") != std::string::npos;
}

// Arrivals: a closed loop (max_concurrency with request_rate inf) replays as
// one, its arrivals ignored; an open loop replays start_times, which already
// hold the client's cap and its gamma gaps; request_rate inf without a cap
// sends everything at once.
ServedRun read_vllm_bench(std::istream& in, const std::string& path, const TraceOptions& o) {
    const json j = parse_document(in, path);
    if (!j.is_object()) data_error(path + ": expected a JSON object (vllm bench serve's --save-result JSON)");
    const json& inputs = list(path, j, "input_lens", -1);
    const auto n = static_cast<std::int64_t>(inputs.size());
    for (const char* field : {"output_lens", "ttfts", "itls"}) list(path, j, field, n);
    if (j.contains("errors")) list(path, j, "errors", n);
    const double rate = request_rate(path, j);
    ServedRun run;
    run.has_itl = true;
    run.workload.concurrency = rate == 0 ? max_concurrency(path, j) : 0;
    const bool replay_starts = rate > 0;
    if (replay_starts) list(path, j, "start_times", n);
    if (!j.contains("duration")) fail(path, "duration", "missing (expected the run's length in seconds)");
    run.duration_s = seconds(path, "duration", j["duration"]);
    double first = -1, last = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (failed(path, j, i)) {
            ++run.failed;
            continue;
        }
        SimRequest r;
        r.input_tokens = tokens(path, fmt::format("input_lens[{}]", i), inputs[i], 1);
        r.output_tokens = tokens(path, fmt::format("output_lens[{}]", i), j["output_lens"][i], 1);
        if (replay_starts) {
            const double t = seconds(path, fmt::format("start_times[{}]", i), j["start_times"][i]);
            if (t < last) fail(path, fmt::format("start_times[{}]", i), "goes back in time (requests are listed in the order sent)");
            if (first < 0) first = t;
            last = t;
            r.arrival_s = (t - first) / o.time_scale;
        }
        run.requests.push_back(measured(path, j, i, r.output_tokens));
        run.workload.requests.push_back(r);
        if (o.limit > 0 && static_cast<std::int64_t>(run.requests.size()) >= o.limit) break;
    }
    if (run.workload.requests.empty()) data_error(path + ": no completed requests (every one failed, or none listed)");
    return run;
}

std::vector<MeasuredSecond> read_engine_series(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) usage_error(path + ": cannot open vLLM's per-second log for reading");
    std::string line;
    std::getline(in, line);
    if (line.rfind("t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct", 0) != 0)
        data_error(path + ":1: expected the header t,prompt_throughput,gen_throughput,running,waiting,kv_cache_pct");
    std::vector<MeasuredSecond> out;
    for (std::int64_t n = 2; std::getline(in, line); ++n) {
        if (line.empty() || line == "\r") continue;
        double f[6];
        char tail = 0;
        const std::string at = fmt::format("{}:{}: ", path, n);
        if (std::sscanf(line.c_str(), "%lf,%lf,%lf,%lf,%lf,%lf%c", &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &tail) < 6 || (tail && tail != '\r'))
            data_error(at + "line: expected 6 comma-separated numbers");
        if (!(f[0] >= 0 && f[0] <= kMaxReplaySeconds)) data_error(at + "t: expected seconds from 0 to 10^7");
        for (int k : {1, 2})
            if (!(f[k] >= 0 && f[k] <= 1e12))
                data_error(at + (k == 1 ? "prompt_throughput" : "gen_throughput") + ": expected tokens per second from 0 to 10^12");
        for (int k : {3, 4})
            if (!(f[k] >= 0 && f[k] <= 1e8 && f[k] == std::floor(f[k])))
                data_error(at + (k == 3 ? "running" : "waiting") + ": expected a whole number of requests from 0 to 10^8");
        if (!(f[5] >= 0 && f[5] <= 100)) data_error(at + "kv_cache_pct: expected a percentage from 0 to 100");
        if (!out.empty() && f[0] <= out.back().t_s) data_error(at + "t: expected seconds in increasing order");
        out.push_back(MeasuredSecond{f[0], static_cast<std::int64_t>(f[3]), static_cast<std::int64_t>(f[4]), f[5] / 100.0});
    }
    return out;
}

}  // namespace kvplan
