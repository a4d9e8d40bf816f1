#include "io/trace_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/model/config_parts.hpp"
#include "io/served_run_reader.hpp"

namespace kvplan {

namespace embedded {
extern const char* const kTraceAzure2023_conv;
extern const char* const kTraceAzure2023_code;
}  // namespace embedded

namespace {

// Where a value came from, for messages: "trace.csv:12: ContextTokens".
struct At {
    const std::string& path;
    std::int64_t line;
    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        data_error(path + ":" + std::to_string(line) + ": " + field + ": " + what);
    }
};

// A trace line holds a few numbers (and Mooncake's block ids: about 10 bytes
// a 512-token block, 2.6 KB for a 128k-token prompt); a longer line is not a
// trace, and reading it whole could take the machine's memory (a 1 GB line).
constexpr std::size_t kMaxLineBytes = std::size_t{1} << 16;
// A trace line is a flat object with at most one list (hash_ids): depth 2.
constexpr int kMaxLineDepth = 4;

// The next line of `in` without its '\n', into `line`; false at the end.
// Refuses a line longer than kMaxLineBytes before reading the rest of it.
bool read_line(std::istream& in, std::string& line, const std::string& path, std::int64_t number) {
    static thread_local std::vector<char> buffer(kMaxLineBytes + 2);
    in.getline(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const std::streamsize got = in.gcount();
    if (in.fail() && !in.eof())
        data_error(path + ":" + std::to_string(number) + ": a line longer than " + std::to_string(kMaxLineBytes) +
                   " bytes (a trace line holds a few numbers)");
    if (got == 0 && in.eof()) return false;
    line.assign(buffer.data(), static_cast<std::size_t>(got) - (in.eof() ? 0 : 1));
    return true;
}

// A field's text as a message quotes it: at most 40 bytes, so that a
// hostile line of a gigabyte gives an error line of a few dozen.
std::string quoted(const std::string& text) {
    return "\"" + (text.size() <= 40 ? text : text.substr(0, 37) + "...") + "\"";
}

std::int64_t tokens(const At& at, const std::string& field, const std::string& text, std::int64_t min) {
    std::int64_t v = 0;
    const char* end = text.data() + text.size();
    auto [p, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc() || p != end) at.fail(field, "expected a whole number of tokens, found " + quoted(text));
    if (v < min || v > kMaxTokens)
        at.fail(field, std::to_string(v) + " tokens: expected " + std::to_string(min) + " to " + std::to_string(kMaxTokens));
    return v;
}

double seconds(const At& at, const std::string& field, const std::string& text) {
    double v = 0;
    const char* end = text.data() + text.size();
    auto [p, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc() || p != end || !std::isfinite(v) || v < 0)
        at.fail(field, "expected a time in seconds (a non-negative number), found " + quoted(text));
    return v;
}

// Days from 1970-01-01 (Howard Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, std::int64_t m, std::int64_t d) {
    y -= m <= 2;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const std::int64_t yoe = y - era * 400;
    const std::int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

// "2023-11-16 18:15:46.6805900" -> seconds since 1970 (UTC; only differences matter).
double date_time(const At& at, const std::string& text) {
    int y = 0, mo = 0, d = 0, h = 0, mi = 0;
    double s = -1;
    char rest = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2d %2d:%2d:%lf%c", &y, &mo, &d, &h, &mi, &s, &rest) != 6 || mo < 1 || mo > 12 || d < 1 || d > 31 ||
        h > 23 || mi > 59 || s < 0 || s >= 61)
        at.fail("TIMESTAMP", "expected a date-time like 2023-11-16 18:15:46.6805900, found " + quoted(text));
    // A day the month does not have (February 31) would count on into the next month.
    const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    const int month_days[] = {31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (d > month_days[mo - 1])
        at.fail("TIMESTAMP",
                quoted(text) + ": " + std::to_string(y) + "-" + std::to_string(mo) + " has " + std::to_string(month_days[mo - 1]) + " days");
    return static_cast<double>(days_from_civil(y, mo, d)) * 86400.0 + h * 3600.0 + mi * 60.0 + s;
}

std::vector<std::string> split_csv(const std::string& line) {
    std::vector<std::string> out(1);
    for (char c : line) {
        if (c == ',') out.emplace_back();
        else if (c != '\r') out.back() += c;
    }
    return out;
}

// One JSON field read as tokens, from the one of `names` present; two of
// them (input_toks beside input_tokens) are refused rather than one picked.
std::int64_t json_tokens(const At& at, const nlohmann::json& j, std::initializer_list<const char*> names, std::int64_t min) {
    const char* given = nullptr;
    for (const char* n : names) {
        if (!j.contains(n)) continue;
        if (given) at.fail(n, std::string("given beside ") + given + ", which names the same count: keep one");
        given = n;
    }
    for (const char* n : names) {
        if (!j.contains(n)) continue;
        const nlohmann::json& v = j[n];
        if (!v.is_number_integer()) at.fail(n, "expected a whole number of tokens");
        const auto x = v.get<std::int64_t>();
        if (x < min || x > kMaxTokens)
            at.fail(n, std::to_string(x) + " tokens: expected " + std::to_string(min) + " to " + std::to_string(kMaxTokens));
        return x;
    }
    std::string list;
    for (const char* n : names) list += (list.empty() ? "" : " or ") + std::string(n);
    at.fail(*names.begin(), "missing (expected " + list + ")");
}

double json_seconds(const At& at, const nlohmann::json& j, const char* name, double scale) {
    if (!j.contains(name)) at.fail(name, "missing");
    const nlohmann::json& v = j[name];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) at.fail(name, "expected a non-negative number");
    return v.get<double>() * scale;
}

std::string detect(const std::string& first_line) {
    if (first_line.rfind("TIMESTAMP", 0) == 0) return "azure";
    if (first_line.rfind("arrival_s", 0) == 0) return "csv";
    if (!first_line.empty() && first_line[0] == '{') {
        if (first_line.find("\"input_length\"") != std::string::npos) return "mooncake";
        return first_line.find("\"queued_ts\"") != std::string::npos ? "timestamps" : "jsonl";
    }
    return "";
}

// The server's four timestamps of a request (LLMServingSim's requests.jsonl,
// vLLM's RequestStateStats): TTFT and E2E from queued_ts, as that run's
// summary counts them; each must follow the one before it.
MeasuredRequest server_timings(const At& at, const nlohmann::json& j, std::int64_t output_tokens) {
    const char* names[] = {"queued_ts", "scheduled_ts", "first_token_ts", "last_token_ts"};
    double ts[4];
    for (int k = 0; k < 4; ++k) {
        ts[k] = json_seconds(at, j, names[k], 1.0);
        if (k > 0 && ts[k] < ts[k - 1]) at.fail(names[k], std::string("before ") + names[k - 1] + " (expected the request's times in order)");
    }
    if (!(ts[3] - ts[0] <= kMaxReplaySeconds)) at.fail("last_token_ts", "over 10^7 s after queued_ts");
    return MeasuredRequest{ts[2] - ts[0], ts[3] - ts[0], output_tokens, {}};
}

// The span of a timestamps trace: its first queued_ts to its last last_token_ts.
struct Span {
    double first = 0, last = 0;
    bool any = false;
    void add(double queued, double done) {
        first = any ? std::min(first, queued) : queued;
        last = any ? std::max(last, done) : done;
        any = true;
    }
};

SimRequest json_request(const At& at, const std::string& line, const std::string& format, ServedRun& run, Span& span) {
    nlohmann::json j;
    try {
        // Depth is checked as the parser meets it, before a hostile line of
        // nested brackets becomes millions of values.
        j = nlohmann::json::parse(line, [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
            if (depth > kMaxLineDepth)
                at.fail("line", "JSON nested deeper than " + std::to_string(kMaxLineDepth) + " levels (expected a flat object)");
            return true;
        });
    } catch (const nlohmann::json::exception&) {
        at.fail("line", "not a JSON object");
    }
    if (!j.is_object()) at.fail("line", "expected a JSON object");
    SimRequest r;
    if (format == "mooncake") {
        r.arrival_s = json_seconds(at, j, "timestamp", 1e-3);
        r.input_tokens = json_tokens(at, j, {"input_length"}, 1);
        r.output_tokens = json_tokens(at, j, {"output_length"}, 1);
        if (j.contains("hash_ids")) {
            const nlohmann::json& ids = j["hash_ids"];
            if (!ids.is_array() || ids.size() > static_cast<std::size_t>(r.input_tokens / 512 + 1))
                at.fail("hash_ids", "expected a list of at most one id per 512 prompt tokens");
            for (const nlohmann::json& id : ids) {
                if (!id.is_number_unsigned()) at.fail("hash_ids", "expected whole non-negative ids");
                r.content_keys.push_back(id.get<std::uint64_t>());
            }
            r.key_block_tokens = 512;  // Mooncake's block (FAST'25 trace README)
        }
    } else {
        r.arrival_s = json_seconds(at, j, "arrival_time", 1.0);
        r.input_tokens = json_tokens(at, j, {"input_toks", "input_tokens", "prompt_len"}, 1);
        r.output_tokens = json_tokens(at, j, {"output_toks", "output_tokens", "output_len"}, 1);
        if (format == "timestamps") {
            run.requests.push_back(server_timings(at, j, r.output_tokens));
            span.add(j["queued_ts"].get<double>(), j["last_token_ts"].get<double>());
        }
    }
    return r;
}

SimRequest csv_request(const At& at, const std::string& line, const std::string& format) {
    const std::vector<std::string> f = split_csv(line);
    if (f.size() != 3) at.fail("line", "expected 3 comma-separated fields, found " + std::to_string(f.size()));
    SimRequest r;
    const bool azure = format == "azure";
    r.arrival_s = azure ? date_time(at, f[0]) : seconds(at, "arrival_s", f[0]);
    r.input_tokens = tokens(at, azure ? "ContextTokens" : "input_tokens", f[1], 1);
    // Azure's trace has requests that generated nothing; vLLM serves at least one token.
    r.output_tokens = std::max<std::int64_t>(1, tokens(at, azure ? "GeneratedTokens" : "output_tokens", f[2], azure ? 0 : 1));
    return r;
}

}  // namespace

namespace {

// The first bytes of a seekable stream, read and put back; empty when it cannot seek.
std::string peek_prefix(std::istream& in) {
    const std::streampos start = in.tellg();
    if (start == std::streampos(-1)) return "";
    std::string prefix(kMaxLineBytes + 1, '\0');
    in.read(prefix.data(), static_cast<std::streamsize>(prefix.size()));
    prefix.resize(static_cast<std::size_t>(in.gcount()));
    in.clear();
    in.seekg(start);
    return prefix;
}

ServedRun parse_lines(std::istream& in, const std::string& path, const TraceOptions& o, std::string format) {
    ServedRun run;
    Workload& w = run.workload;
    Span span;
    std::string line;
    std::int64_t n = 0;
    std::optional<double> first, last;
    while (read_line(in, line, path, n + 1)) {
        ++n;
        if (line.empty() || line == "\r") continue;
        if (format == "auto") {
            format = detect(line);
            if (format.empty()) data_error(path + ":1: not a trace kvplan reads (expected an Azure CSV header, arrival_s,..., or JSON lines)");
        }
        const bool header = (format == "azure" && line.rfind("TIMESTAMP", 0) == 0) || (format == "csv" && line.rfind("arrival_s", 0) == 0);
        if (header) continue;
        const At at{path, n};
        const bool json = format == "mooncake" || format == "jsonl" || format == "timestamps";
        SimRequest r = json ? json_request(at, line, format, run, span) : csv_request(at, line, format);
        if (last && r.arrival_s < *last) at.fail("arrival", "goes back in time (the trace must be sorted by arrival)");
        last = r.arrival_s;
        if (!first) first = r.arrival_s;
        r.arrival_s = (r.arrival_s - *first) / o.time_scale;
        if (!(r.arrival_s <= kMaxReplaySeconds))
            at.fail("arrival",
                    fmt::format("{:.6g} s after the first request: expected at most 10^7 s (116 days) of traffic; use --time-scale or --limit",
                                r.arrival_s));
        w.requests.push_back(std::move(r));
        if (o.limit > 0 && static_cast<std::int64_t>(w.requests.size()) >= o.limit) break;
    }
    if (w.requests.empty()) data_error(path + ": no requests (an empty trace)");
    if (format == "timestamps") {
        run.clock = ServedClock::Queued;
        run.duration_s = span.last - span.first;
    }
    return run;
}

ServedRun parse_trace(std::istream& in, const std::string& path, const TraceOptions& o) {
    if (!(o.time_scale > 0) || !std::isfinite(o.time_scale)) usage_error("--time-scale: expected a positive number");
    if (o.format == "vllm-bench" || (o.format == "auto" && looks_like_vllm_bench(peek_prefix(in)))) return read_vllm_bench(in, path, o);
    return parse_lines(in, path, o, o.format);
}

}  // namespace

Workload read_trace_stream(std::istream& in, const std::string& path, const TraceOptions& o) {
    return parse_trace(in, path, o).workload;
}

ServedRun read_served_run_stream(std::istream& in, const std::string& path, const TraceOptions& o) {
    return parse_trace(in, path, o);
}

const char* bundled_trace_names() {
    return "azure-2023-conv, azure-2023-code";
}

namespace {

ServedRun read_file(const std::string& path, const TraceOptions& o) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec) && (path == "azure-2023-conv" || path == "azure-2023-code")) {
        std::istringstream text(path == "azure-2023-conv" ? embedded::kTraceAzure2023_conv : embedded::kTraceAzure2023_code);
        return parse_trace(text, path, o);
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) usage_error(path + ": cannot open the trace for reading (a file, or a bundled trace: " + std::string(bundled_trace_names()) + ")");
    return parse_trace(in, path, o);
}

}  // namespace

ServedRun read_served_run(const std::string& path, const TraceOptions& o) {
    ServedRun run = read_file(path, o);
    std::error_code ec;
    // vLLM's per-second log, where the run's folder holds it (LLMServingSim's layout).
    const std::filesystem::path series = std::filesystem::path(path).parent_path() / "timeseries.csv";
    if (run.clock == ServedClock::Queued && std::filesystem::is_regular_file(series, ec)) run.series = read_engine_series(series.string());
    // A log whose KV usage stays 0% while requests run did not record it
    // (the max_num_seqs 128 run's timeseries.csv): not compared.
    const auto kv = [](const MeasuredSecond& m) { return m.kv_cache_usage > 0; };
    const auto idle = [](const MeasuredSecond& m) { return m.running == 0; };
    run.series_kv = std::any_of(run.series.begin(), run.series.end(), kv) || std::all_of(run.series.begin(), run.series.end(), idle);
    return run;
}

Workload read_trace(const std::string& path, const TraceOptions& o) {
    return read_file(path, o).workload;
}

}  // namespace kvplan
