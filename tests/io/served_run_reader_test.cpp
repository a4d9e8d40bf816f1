// The served-run readers (io/served_run_reader.hpp, io/trace_reader.hpp) on the
// bundled measured runs (tests/fixtures/reference/serving/), against figures the
// runs' own tools published: vllm bench serve's aggregates in the same file, and
// LLMServingSim's summary.txt for the server timestamps.
#include "io/served_run_reader.hpp"

#include <sstream>

#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "core/sim/served_run.hpp"
#include "io/trace_reader.hpp"

using namespace kvplan;

namespace {

const std::string kServing = std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/reference/serving/";
const std::string kBench = kServing + "vllm-bench_RTX3090_vLLM0.17.1/llama31-8b_offload0_conc1_run1.json";

ServedRun read_text(const std::string& text, const std::string& format = "auto") {
    std::istringstream in(text);
    return read_served_run_stream(in, "run", TraceOptions{format});
}

// The message of the data error reading `text` as a trace named "run" raises.
std::string data_error_of(const std::string& text, const std::string& format = "auto") {
    try {
        read_text(text, format);
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Data);
        return e.what();
    }
    FAIL("no error");
    return "";
}

}  // namespace

TEST_CASE("vllm bench serve --save-detailed: a closed loop of 20 requests, the file's own means reproduced") {
    const ServedRun run = read_served_run(kBench, TraceOptions{});
    REQUIRE(run.requests.size() == 20);
    CHECK(run.workload.requests.size() == 20);
    CHECK(run.workload.concurrency == 1);  // max_concurrency 1, request_rate "inf"
    CHECK(run.clock == ServedClock::RequestSent);
    CHECK(run.has_itl);
    CHECK(run.failed == 0);
    CHECK(run.workload.requests[0].input_tokens == 255);
    CHECK(run.workload.requests[0].output_tokens == 64);
    CHECK(run.requests[0].ttft_s == 0.028332741998383426);  // ttfts[0]
    CHECK(run.requests[0].itl_s.size() == 64);
    CHECK(run.duration_s == 26.60436330199991);
    const ServedSummary s = summarise_served(run);
    // The file's aggregates, computed by vLLM from the same lists.
    CHECK(s.ttft_s.mean * 1e3 == Approx(103.75466999985292).epsilon(1e-12));   // mean_ttft_ms
    CHECK(s.ttft_s.p99 * 1e3 == Approx(109.27649105091405).epsilon(1e-12));    // p99_ttft_ms
    CHECK(s.itl_s.mean * 1e3 == Approx(19.159329357030686).epsilon(1e-12));    // mean_itl_ms
    CHECK(s.output_tokens_per_s == Approx(48.11240868537453).epsilon(1e-12));  // output_throughput
    // vLLM's E2E ends when the stream closes, tens of microseconds after the
    // last chunk; E2E here is TTFT + the gaps: 1,329.952 ms against its
    // mean_e2el_ms 1,329.965 (a script over the lists), TPOT 19.4634 against 19.4637.
    CHECK(s.e2e_s.mean * 1e3 == Approx(1329.9652081999739).epsilon(1e-4));
    CHECK(s.tpot_s.mean * 1e3 == Approx(19.463659336509856).epsilon(1e-4));
    // simulate --trace takes the same file as a workload.
    CHECK(read_trace(kBench, TraceOptions{}).concurrency == 1);
}

TEST_CASE("server timestamps: TTFT and E2E from queued_ts reproduce the run's summary.txt, with vLLM's per-second log") {
    const ServedRun run = read_served_run(kServing + "RTX4090_Llama-3.1-8B/requests.jsonl", TraceOptions{});
    REQUIRE(run.requests.size() == 300);
    CHECK(run.clock == ServedClock::Queued);
    CHECK_FALSE(run.has_itl);
    // bench-0: first_token_ts 27537.350135653 - queued_ts 27536.660701067.
    CHECK(run.requests[0].ttft_s == Approx(0.689434586).margin(1e-9));
    CHECK(run.requests[0].output_tokens == 531);
    // The last last_token_ts less the first queued_ts (a script over the file).
    CHECK(run.duration_s == Approx(183.567455512).margin(1e-6));
    const ServedSummary s = summarise_served(run);
    // summary.txt ("vLLM" column): TTFT mean 65,456.6 ms, median 60,110.9, P99 137,356.3;
    // TPOT mean 32.4 ms; Latency mean 86,578.3 ms.
    CHECK(s.ttft_s.mean * 1e3 == Approx(65456.6).margin(0.05));
    CHECK(s.ttft_s.p50 * 1e3 == Approx(60110.9).margin(0.05));
    CHECK(s.ttft_s.p99 * 1e3 == Approx(137356.3).margin(0.05));
    CHECK(s.tpot_s.mean * 1e3 == Approx(32.4).margin(0.05));
    CHECK(s.e2e_s.mean * 1e3 == Approx(86578.3).margin(0.05));
    // timeseries.csv: 184 seconds, the first "1.0,3392.0,2.0,5,2,13.22".
    REQUIRE(run.series.size() == 184);
    CHECK(run.series[0].t_s == 1.0);
    CHECK(run.series[0].running == 5);
    CHECK(run.series[0].waiting == 2);
    CHECK(run.series[0].kv_cache_usage == Approx(0.1322));
    CHECK(run.series_kv);
    // The workload is what simulate --trace replayed before: arrival_time, relative to the first.
    const Workload w = read_trace(kServing + "RTX4090_Llama-3.1-8B/requests.jsonl", TraceOptions{});
    CHECK(w.requests[1].arrival_s == Approx(1787267980.3478317 - 1787267980.0827403).margin(1e-6));
    // The max_num_seqs 128 run: its README's check (TTFT 58,015.4 ms, TPOT 34.6 ms, E2E 80,550.9 ms).
    const ServedRun mns128 = read_served_run(kServing + "RTX4090_Llama-3.1-8B_mns128/requests.jsonl", TraceOptions{});
    const ServedSummary m = summarise_served(mns128);
    CHECK(m.ttft_s.mean * 1e3 == Approx(58015.4).margin(0.05));
    CHECK(m.tpot_s.mean * 1e3 == Approx(34.6).margin(0.05));
    CHECK(m.e2e_s.mean * 1e3 == Approx(80550.9).margin(0.05));
    // Its timeseries.csv has kv_cache_pct 0.0 on every one of its 173 rows, 38 requests running at 4 s: not logged.
    CHECK(mns128.series.size() == 173);
    CHECK_FALSE(mns128.series_kv);
}

TEST_CASE("a served run's bad fields are refused naming the file and the field") {
    const std::string ok = R"("input_lens": [10], "output_lens": [5], "ttfts": [0.1], "itls": [[0.01, 0.01, 0.01, 0.01]], )"
                           R"("request_rate": "inf", "max_concurrency": 1, "duration": 1.0)";
    CHECK(summarise_served(read_text("{" + ok + "}")).e2e_s.mean == Approx(0.14));  // 0.1 s + 4 gaps of 0.01 s
    // Indented (json.dump with indent): a lone "{" on the first line is a document, not JSON lines.
    CHECK(read_text("{\n  " + ok + "\n}\n").workload.concurrency == 1);
    // A broken JSON line is still a trace line, refused with its number, not read as a document.
    CHECK(data_error_of("{\"arrival_time\": 1, \"input_toks\":\n") == "run:1: line: not a JSON object");
    // A failed request (a non-empty errors entry) is left out of the workload and the measured side, and counted.
    const ServedRun two = read_text(R"({"input_lens": [10, 20], "output_lens": [5, 0], "ttfts": [0.1, 0], "itls": [[0.01], []], )"
                                    R"("errors": ["", "timeout"], "request_rate": "inf", "max_concurrency": 2, "duration": 1})");
    CHECK(two.failed == 1);
    CHECK(two.requests.size() == 1);
    CHECK(two.workload.requests.size() == 1);
    CHECK(data_error_of(R"({"input_lens": [10], "output_lens": [5], "itls": [[]], "request_rate": "inf", "duration": 1})") ==
          "run: ttfts: missing (expected one entry per request: run vllm bench serve with --save-result --save-detailed)");
    CHECK(data_error_of(R"({"input_lens": [10], "output_lens": [5], "ttfts": [-0.5], "itls": [[]], "request_rate": "inf", "duration": 1})") ==
          "run: ttfts[0]: -0.5 s: expected 0 to 10^7 s");
    CHECK(data_error_of(R"({"input_lens": [10], "output_lens": ["5"], "ttfts": [0.1], "itls": [[]], "request_rate": "inf", "duration": 1})") ==
          "run: output_lens[0]: expected a whole number of tokens");
    CHECK(data_error_of(R"({"input_lens": [10, 11], "output_lens": [5], "ttfts": [0.1], "itls": [[]], "request_rate": "inf", "duration": 1})") ==
          "run: output_lens: 1 entries, expected 2 (one per request, as input_lens)");
    CHECK(data_error_of(R"({"input_lens": [10], "output_lens": [5], "ttfts": [0.1], "itls": [[]], "request_rate": 2, "duration": 1})") ==
          "run: start_times: missing (expected one entry per request: run vllm bench serve with --save-result --save-detailed)");
    CHECK(data_error_of(R"({"input_lens": [10], "output_lens": [5], "ttfts": [0.1], "itls": [[]], "request_rate": -1, "duration": 1})") ==
          "run: request_rate: expected requests per second (0 to 10^9) or \"inf\"");
    const std::string line = R"({"input_toks": 10, "output_toks": 5, "arrival_time": 1.0, "queued_ts": 5.0, "scheduled_ts": 5.1, )";
    CHECK(data_error_of(line + R"("first_token_ts": 5.0, "last_token_ts": 6.0})" + "\n") ==
          "run:1: first_token_ts: before scheduled_ts (expected the request's times in order)");
    CHECK(data_error_of(line + R"("first_token_ts": 5.2})" + "\n") == "run:1: last_token_ts: missing");
    CHECK(data_error_of(line + R"("first_token_ts": 5.2, "last_token_ts": "soon"})" + "\n") ==
          "run:1: last_token_ts: expected a non-negative number");
    // The queued_ts of a plain jsonl line is not read: format jsonl keeps what it took before.
    CHECK(read_text(line + R"("first_token_ts": 5.0, "last_token_ts": 6.0})" + "\n", "jsonl").requests.empty());
}
