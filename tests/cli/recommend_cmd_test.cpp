// `kvplan recommend` end to end through the real binary: the printed engine
// commands run as pasted (the preset's Hugging Face id, DP replicas, the
// planned memory fraction) and the default output fits 100 columns.
#include <algorithm>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "binary_run.hpp"

using kvplan::test::Run;
using kvplan::test::ScratchDir;

namespace {

// The widest line of `text`, in display cells (kvplan prints ASCII only).
std::size_t widest_line(const std::string& text) {
    std::istringstream in(text);
    std::size_t widest = 0;
    for (std::string line; std::getline(in, line);) widest = std::max(widest, line.size());
    return widest;
}

// The vllm serve command as printed, its " \\" continuations joined.
std::string vllm_command(const std::string& out) {
    const auto start = out.find("  vllm serve ");
    if (start == std::string::npos) return "";
    std::string cmd;
    std::istringstream in(out.substr(start));
    for (std::string line; std::getline(in, line);) {
        const bool more = line.size() >= 2 && line.compare(line.size() - 2, 2, " \\") == 0;
        cmd += (more ? line.substr(0, line.size() - 2) : line) + " ";
        if (!more) break;
    }
    return cmd;
}

}  // namespace

TEST_CASE("recommend prints a vllm command with the Hugging Face id, DP replicas and the memory fraction, within 100 columns") {
    const Run r = Run::kvplan(
        {"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "0.5", "--tpot", "0.05", "--gpus", "h100-sxm", "--num-gpus", "8"});
    INFO(r.command << "\n" << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const std::string vllm = vllm_command(r.out);
    CHECK_THAT(vllm, Catch::StartsWith("  vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 1 "));
    CHECK_THAT(vllm, Catch::Contains("--data-parallel-size 8 ") && Catch::Contains("--gpu-memory-utilization 0.90 ") &&
                         Catch::Contains("--max-num-batched-tokens ") && Catch::Contains("--max-model-len 8192 "));
    CHECK_THAT(r.out, Catch::Contains("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 1 --dp 8"));
    // TensorRT-LLM's settings in the YAML its --extra_llm_api_options reads, written by a here-document.
    CHECK_THAT(r.out, Catch::Contains("  cat > trtllm.yaml <<'EOF'\ntensor_parallel_size: 1\nmax_batch_size: "));
    CHECK_THAT(r.out, Catch::Contains("\nEOF\n  trtllm-serve meta-llama/Llama-3.1-8B-Instruct --extra_llm_api_options trtllm.yaml\n"));
    CHECK(r.out.find("MODEL") == std::string::npos);
    CHECK(widest_line(r.out) <= 100);
}

TEST_CASE("recommend default output fits 100 columns for every help example, and --wide prints more") {
    const Run narrow = Run::kvplan({"recommend", "--model", "llama-3.1-70b", "--context", "32768", "--ttft", "2", "--tpot", "0.04",
                                    "--price-per-hour", "h100-sxm=2.5,h200=3.5,a100-80gb=1.6"});
    INFO(narrow.out);
    REQUIRE(narrow.exit_code == 0);
    CHECK(widest_line(narrow.out) <= 100);
    CHECK_THAT(narrow.out, Catch::Contains("Rejected, closest first") && Catch::Contains(": misses TTFT 2000.0 ms ("));
    const Run wide = Run::kvplan({"recommend", "--model", "llama-3.1-70b", "--context", "32768", "--ttft", "2", "--tpot", "0.04", "--price-per-hour",
                                  "h100-sxm=2.5,h200=3.5,a100-80gb=1.6", "--wide"});
    REQUIRE(wide.exit_code == 0);
    CHECK_THAT(wide.out, Catch::Contains("tok/s per GPU") && Catch::Contains("max batched tokens"));
    CHECK(widest_line(wide.out) > 100);
    CHECK_THAT(wide.out, Catch::Contains("does not fit one request of 32,768 tokens"));
}

TEST_CASE("recommend names the target each rejected configuration misses, in the table and the JSON, and exits 1 when none qualifies") {
    const Run r =
        Run::kvplan({"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "0.5", "--tpot", "0.001", "--gpus", "h100-sxm,l4"});
    INFO(r.out);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("Nothing meets both targets") && Catch::Contains("misses TPOT 1.0 ms ("));
    CHECK(widest_line(r.out) <= 100);
    const Run j = Run::kvplan(
        {"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "0.5", "--tpot", "0.001", "--gpus", "h100-sxm,l4", "--json"});
    CHECK(j.exit_code == 1);
    CHECK_THAT(j.out, Catch::Contains("\"missed\": [\n        \"tpot\"\n      ]"));
}

TEST_CASE("recommend --slo: the fleet covers the target rate, and its cost per hour and per million tokens follow by hand") {
    // One H100 at TP 1 and 2 GPU-hour USD: replicas x rate per replica covers
    // the 30 req/s asked; the cost is gpus_total x 2 USD per hour; the traffic
    // carries 30 x 3600 x 1024 input tokens an hour (vllm bench serve's
    // default 1024-token prompts) and 30 x 3600 x 128 output tokens.
    const Run r = Run::kvplan({"recommend", "--draws", "0", "--model", "llama-3.1-8b", "--slo", "ttft=2s,tpot=50ms", "--rate", "30", "--gpus", "h100-sxm",
                               "--max-gpus", "1", "--requests", "400", "--price-per-hour", "h100-sxm=2", "--json"});
    INFO(r.command << "\n" << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["candidates"].size() == 3);  // TP 1 x three knob settings
    for (const auto& c : j["candidates"]) {
        const double rate = c["max_rate_per_replica_rps"].get<double>();
        const auto replicas = c["replicas"].get<std::int64_t>();
        CHECK(static_cast<double>(replicas) * rate >= 30.0);
        CHECK(static_cast<double>(replicas - 1) * rate < 30.0);  // no replica more than needed
        CHECK(c["gpus_total"].get<std::int64_t>() == replicas);
        CHECK(c["usd_per_hour"].get<double>() == Approx(2.0 * static_cast<double>(replicas)));
        CHECK(c["usd_per_million_input_tokens"].get<double>() == Approx(c["usd_per_hour"].get<double>() / (30 * 3600 * 1024 / 1e6)));
        CHECK(c["usd_per_million_output_tokens"].get<double>() == Approx(c["usd_per_hour"].get<double>() / (30 * 3600 * 128 / 1e6)));
        CHECK(c["slo_attainment"].get<double>() >= 0.99);  // at the rate found, in the simulator
        if (replicas > 1) CHECK_THAT(c["vllm_command"].get<std::string>(), Catch::Contains(fmt::format("--data-parallel-size {}", replicas)));
    }
    CHECK(j["search_s"].get<double>() > 0);
    // Deterministic: the same answer again (search_s aside).
    const Run again = Run::kvplan({"recommend", "--draws", "0", "--model", "llama-3.1-8b", "--slo", "ttft=2s,tpot=50ms", "--rate", "30", "--gpus", "h100-sxm",
                                   "--max-gpus", "1", "--requests", "400", "--price-per-hour", "h100-sxm=2"});
    const Run third = Run::kvplan({"recommend", "--draws", "0", "--model", "llama-3.1-8b", "--slo", "ttft=2s,tpot=50ms", "--rate", "30", "--gpus", "h100-sxm",
                                   "--max-gpus", "1", "--requests", "400", "--price-per-hour", "h100-sxm=2"});
    CHECK(again.out == third.out);
    CHECK(widest_line(again.out) <= 100);
}

namespace {

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

std::vector<std::string> csv_fields(const std::string& line) {
    std::vector<std::string> out(1);
    for (char ch : line) {
        if (ch == ',') out.emplace_back();
        else out.back() += ch;
    }
    return out;
}

}  // namespace

TEST_CASE("recommend --slo --format csv and markdown: the JSON's figures, one header row, each table one row per candidate") {
    const std::vector<std::string> base = {"recommend", "--draws", "0",  "--model",  "llama-3.1-8b", "--slo", "ttft=2s,tpot=50ms", "--rate", "30",
                                           "--gpus",     "h100-sxm", "--max-gpus",   "1",     "--requests",        "400",    "--price-per-hour",
                                           "h100-sxm=2", "--format"};
    auto run = [&](const char* format) {
        std::vector<std::string> a = base;
        a.push_back(format);
        const Run r = Run::kvplan(a);
        INFO(r.command << "\n" << r.out << r.err);
        REQUIRE(r.exit_code == 0);
        CHECK(r.err.empty());
        return r.out;
    };
    const auto j = nlohmann::json::parse(run("json"));
    const std::vector<std::string> csv = lines_of(run("csv"));
    REQUIRE(csv.size() == 1 + j["candidates"].size());  // one header row, then a row per candidate
    const std::vector<std::string> head = csv_fields(csv[0]);
    const auto column = [&](const std::string& key) { return std::find(head.begin(), head.end(), key) - head.begin(); };
    REQUIRE(column("max_rate_per_replica_rps") < static_cast<std::ptrdiff_t>(head.size()));
    for (std::size_t i = 0; i < j["candidates"].size(); ++i) {
        const auto& c = j["candidates"][i];
        const std::vector<std::string> row = csv_fields(csv[i + 1]);
        REQUIRE(row.size() == head.size());
        CHECK(row[column("rank")] == std::to_string(i + 1));
        CHECK(row[column("knobs")] == c["knobs"].get<std::string>());
        CHECK(std::stod(row[column("max_rate_per_replica_rps")]) == c["max_rate_per_replica_rps"].get<double>());
        CHECK(std::stod(row[column("usd_per_hour")]) == c["usd_per_hour"].get<double>());
        CHECK(std::stod(row[column("ttft_p99_s")]) == c["ttft_p99_s"].get<double>());
    }
    // Markdown: the fleet table and the latency table, each a header, a rule
    // and a row per candidate with as many cells; then the commands.
    const std::vector<std::string> md = lines_of(run("markdown"));
    std::vector<std::vector<std::string>> tables(1);
    for (const std::string& line : md) {
        if (!line.empty() && line.front() == '|') tables.back().push_back(line);
        else if (!tables.back().empty()) tables.emplace_back();
    }
    if (tables.back().empty()) tables.pop_back();
    REQUIRE(tables.size() == 2);
    for (const auto& t : tables) {
        CHECK(t.size() == 2 + j["candidates"].size());
        for (const std::string& line : t) CHECK(std::count(line.begin(), line.end(), '|') == std::count(t[0].begin(), t[0].end(), '|'));
    }
    CHECK(tables[0][0].find("$/M input") != std::string::npos);  // Markdown has every column
    const std::string all = run("markdown");
    CHECK_THAT(all, Catch::Contains("\n```sh\n") && Catch::Contains("  vllm serve meta-llama/Llama-3.1-8B-Instruct "));
}

TEST_CASE("recommend --slo --kv-dtype auto,fp8 --weights-dtype auto,fp8: every item is a candidate, each with its own engine flags") {
    // One H100 at TP 1: 2 KV dtypes x 2 weight formats x 3 knob settings = 12 candidates tried.
    const Run r = Run::kvplan(
        {"recommend", "--draws", "0",  "--model", "llama-3.1-8b", "--slo",    "ttft=2s,tpot=50ms", "--rate",   "30",    "--gpus", "h100-sxm", "--max-gpus", "1",
         "--requests", "200",     "--kv-dtype",   "auto,fp8", "--weights-dtype",   "auto,fp8", "--top", "12",     "--json"});
    INFO(r.command << "\n" << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["candidates_tried"].get<std::int64_t>() == 12);
    int fp8_kv = 0, fp8_weights = 0;
    for (const auto& c : j["candidates"]) {
        const std::string cmd = c["vllm_command"].get<std::string>();
        // An fp8 KV cache is asked of the engine; fp8 weights from a bf16 checkpoint are quantized on load.
        CHECK((c["kv_dtype"] == "fp8") == (cmd.find("--kv-cache-dtype fp8") != std::string::npos));
        CHECK((c["weights_dtype"] == "fp8") == (cmd.find("--quantization fp8") != std::string::npos));
        fp8_kv += c["kv_dtype"] == "fp8";
        fp8_weights += c["weights_dtype"] == "fp8";
    }
    CHECK(fp8_kv > 0);
    CHECK(fp8_weights > 0);
    // The text table names each candidate's KV dtype and weights, and fits 100 columns.
    const Run t = Run::kvplan({"recommend", "--draws", "0", "--model", "llama-3.1-8b", "--slo", "ttft=2s,tpot=50ms", "--rate", "30", "--gpus", "h100-sxm",
                               "--max-gpus", "1", "--requests", "200", "--kv-dtype", "auto,fp8", "--weights-dtype", "auto,fp8"});
    CHECK_THAT(t.out, Catch::Contains(", kv fp8"));
    CHECK_THAT(t.out, Catch::Contains(", w fp8"));
    CHECK(widest_line(t.out) <= 100);
    // An empty item is a typo, refused.
    const Run bad = Run::kvplan({"recommend", "--draws", "0", "--model", "llama-3.1-8b", "--slo", "ttft=2s", "--rate", "1", "--kv-dtype", "auto,,fp8"});
    CHECK(bad.exit_code == 2);
    CHECK(bad.out.empty());
    CHECK_THAT(bad.err, Catch::Contains("--kv-dtype auto,,fp8: an empty item"));
}

TEST_CASE("recommend --slo: nothing qualifies when a request alone misses TTFT, and the message names the value that passes") {
    // A 1024-token prompt takes more than 1 ms to prefill anywhere.
    const Run r = Run::kvplan(
        {"recommend", "--draws", "0", "--model", "llama-3.1-8b", "--slo", "ttft=1ms", "--rate", "1", "--gpus", "h100-sxm", "--max-gpus", "2", "--requests", "50"});
    INFO(r.command << "\n" << r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Catch::Contains("Nothing qualifies. The ttft target binds"));
    CHECK_THAT(r.out, Catch::Contains("would pass at a low rate"));
}

TEST_CASE("recommend --price-file: the same ranking and costs as --price-per-hour (which overrides it) and bad files exit 65 naming the field") {
    const ScratchDir dir;
    const std::string prices = dir.write("prices.json", R"({"source": "a test", "usd_per_gpu_hour": {"h100-sxm": 2.5, "l4": 0.5}})").string();
    const std::vector<std::string> base = {"recommend", "--model", "llama-3.1-8b", "--context", "8192",        "--ttft",
                                           "0.5",       "--tpot",  "0.05",         "--gpus",    "h100-sxm,l4", "--json"};
    auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = base;
        args.insert(args.end(), extra.begin(), extra.end());
        return Run::kvplan(args);
    };
    const Run file = with({"--price-file", prices});
    const Run flags = with({"--price-per-hour", "h100-sxm=2.5,l4=0.5"});
    INFO(file.command << "\n" << file.err);
    REQUIRE(file.exit_code == 0);
    CHECK(file.out == flags.out);
    // --price-per-hour h100-sxm=5 over the file: H100 rows cost twice as much per hour.
    const Run both = with({"--price-file", prices, "--price-per-hour", "h100-sxm=5"});
    CHECK(both.out == with({"--price-per-hour", "h100-sxm=5,l4=0.5"}).out);
    CHECK(both.out != file.out);

    const std::vector<std::pair<std::string, std::string>> bad = {
        {R"({"usd_per_gpu_hour": {"h100-sxm": -1}})", "usd_per_gpu_hour.h100-sxm: expected USD per GPU-hour in (0, 10^6), found -1"},
        {R"({"usd_per_gpu_hour": {"h100-sxm": "2.5"}})", "usd_per_gpu_hour.h100-sxm: expected USD per GPU-hour in (0, 10^6), found \"2.5\""},
        {R"({"usd_per_gpu_hour": {"tpu-v9": 1}})", "usd_per_gpu_hour.tpu-v9: not a device kvplan knows (see kvplan gpus)"},
        {R"({"usd_per_gpu_hour": {"h100-sxm": 1, "h100": 2}})", "is priced twice"},
        {R"({"usd_per_gpu_hour": {}})", "usd_per_gpu_hour: no device priced"},
        {R"({"usd_per_gpu_hour": null})", "usd_per_gpu_hour: expected an object of device id to USD per GPU-hour, found null"},
        {R"({"prices": {}})", "prices: unknown key (expected usd_per_gpu_hour and optionally source)"},
        {R"([1, 2])", "expected a JSON object with usd_per_gpu_hour, found an array"},
        {R"({"usd_per_gpu_hour": {"l4": 1e400}})", "bad.json"},
    };
    for (const auto& [text, message] : bad) {
        const Run r = with(std::vector<std::string>{"--price-file", dir.write("bad.json", text).string()});
        INFO(text << "\n" << r.err);
        CHECK(r.exit_code == 65);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Catch::Contains("bad.json") && Catch::Contains(message));
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
    const Run missing = with(std::vector<std::string>{"--price-file", (dir.path() / "nope.json").string()});
    CHECK(missing.exit_code == 2);
    CHECK_THAT(missing.err, Catch::Contains("--price-file"));
}

TEST_CASE("recommend --slo --disaggregated: units of every P:D ratio beside the aggregated candidates, each fleet by hand") {
    // --max-gpus 1: every instance TP 1. The units: P and D from 1 to 4,
    // coprime, at most 16 GPUs: 1:1, 1:2, 1:3, 1:4, 2:1, 2:3, 3:1, 3:2, 3:4,
    // 4:1, 4:3 (11), beside TP 1 x three knob settings: 14 candidates.
    const std::vector<std::string> args = {
        "recommend", "--draws", "0",  "--model", "llama-3.1-8b",     "--slo",      "ttft=2s,tpot=50ms", "--rate", "30", "--gpus", "h100-sxm", "--max-gpus", "1",
        "--requests", "200",     "--price-per-hour", "h100-sxm=2", "--disaggregated",   "--top",  "14"};
    std::vector<std::string> json = args;
    json.push_back("--json");
    const Run r = Run::kvplan(json);
    INFO(r.command << "\n" << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["candidates_tried"].get<std::int64_t>() == 14);
    int units = 0;
    for (const auto& c : j["candidates"]) {
        if (!c["disaggregated"].get<bool>()) continue;
        ++units;
        const auto p = c["prefill_replicas"].get<std::int64_t>(), d = c["decode_replicas"].get<std::int64_t>();
        const auto replicas = c["replicas"].get<std::int64_t>();
        // A unit of P + D one-GPU instances; as many units as cover 30 req/s; 2 USD per GPU-hour.
        CHECK(c["gpus_total"].get<std::int64_t>() == replicas * (p + d));
        CHECK(static_cast<double>(replicas) * c["max_rate_per_replica_rps"].get<double>() >= 30.0);
        CHECK(c["usd_per_hour"].get<double>() == Approx(2.0 * static_cast<double>(replicas * (p + d))));
        CHECK(c["kv_link"] == "nvlink");  // auto: at most 7 GPUs, one node, and the H100 SXM has NVLink
        CHECK(c["vllm_command"].is_null());
        CHECK_THAT(c["vllm_prefill_command"].get<std::string>(), Catch::Contains(R"("kv_connector":"NixlConnector")"));
        CHECK_THAT(c["sglang_prefill_command"].get<std::string>(), Catch::Contains("--disaggregation-mode prefill"));
        CHECK_THAT(c["sglang_decode_command"].get<std::string>(), Catch::Contains("--disaggregation-mode decode"));
    }
    CHECK(units > 0);
    // The verdict names the kind the ranking put first.
    const std::string first = j["candidates"][0]["disaggregated"].get<bool>() ? "disaggregated" : "aggregated";
    CHECK(j["disaggregation"]["winner"] == first);
    const Run t = Run::kvplan(args);
    CHECK_THAT(t.out, Catch::Contains("Aggregated or disaggregated: the best aggregated plan"));
    CHECK(widest_line(t.out) <= 100);
    // Refused: another engine, and a link without units.
    const Run sglang =
        Run::kvplan({"recommend", "--draws", "0", "--model", "llama-3.1-8b", "--slo", "ttft=2s", "--rate", "1", "--disaggregated", "--engine", "sglang"});
    CHECK(sglang.exit_code == 2);
    CHECK_THAT(sglang.err, Catch::Contains("--disaggregated: disaggregated prefill/decode is simulated with vLLM's engine only"));
    const Run bogus = Run::kvplan(
        {"recommend", "--draws", "0", "--model", "llama-3.1-8b", "--slo", "ttft=2s", "--rate", "1", "--gpus", "h100-sxm", "--disaggregated", "--kv-link", "0GB/s"});
    CHECK(bogus.exit_code == 2);
    CHECK(bogus.out.empty());
    CHECK_THAT(bogus.err, Catch::Contains("--kv-link 0GB/s: expected nvlink, ib-ndr, ib-xdr, roce or a bandwidth"));
    const Run link = Run::kvplan({"recommend", "--draws", "0", "--model", "llama-3.1-8b", "--slo", "ttft=2s", "--rate", "1", "--kv-link", "roce"});
    CHECK(link.exit_code == 2);
    CHECK_THAT(link.err, Catch::Contains("--kv-link: the KV transfer link of disaggregated units; add --disaggregated"));
}

TEST_CASE("recommend --slo --disaggregated: a unit whose pool cannot hold the model is rejected naming that pool") {
    // Llama-3.1-8B's 14.96 GiB of bf16 weights exceed 0.9 x a T4's 14.56 GiB
    // at TP 1 and fit at TP 2: a unit with a TP 1 prefill side is refused for
    // its prefill pool, one with TP 2 prefill and TP 1 decode for its decode pool.
    const Run r = Run::kvplan({"recommend", "--draws", "0", "--model", "llama-3.1-8b", "--slo", "ttft=10s", "--rate", "0.2", "--gpus", "t4", "--max-gpus", "2",
                               "--requests", "10", "--input-len", "fixed:100", "--output-len", "fixed:10", "--disaggregated", "--json"});
    INFO(r.command << "\n" << r.out << r.err);
    // Ten requests are a burst to the candidates that hold the model (they
    // meet the target at any rate, so none ranks: exit 1); the memory
    // rejections are what this checks.
    REQUIRE(r.exit_code == 1);
    const auto j = nlohmann::json::parse(r.out);
    CHECK_THAT(j["nearest"].get<std::string>(), Catch::Contains("10 requests are too few to find a rate"));
    int prefill = 0, decode = 0;
    for (const auto& c : j["rejected"]) {
        if (!c["disaggregated"].get<bool>()) continue;
        const std::string reason = c["reason"].get<std::string>();
        if (c["prefill_tp"] == 1) {
            ++prefill;
            CHECK_THAT(reason, Catch::StartsWith("memory: prefill pool: the model leaves no KV cache memory on NVIDIA T4 16GB"));
        } else if (c["decode_tp"] == 1) {
            ++decode;
            CHECK_THAT(reason, Catch::StartsWith("memory: decode pool: the model leaves no KV cache memory on NVIDIA T4 16GB"));
        }
    }
    CHECK(prefill > 0);
    CHECK(decode > 0);
}

TEST_CASE("recommend --slo --disaggregated on a mixture-of-experts model: units of DP + EP groups beside units of TP instances") {
    // Mixtral-8x7B on H100s, --max-gpus 2. Aggregated: TP 1 and 2 and DP 2
    // + EP 2, each with three knob settings (9). Units of TP sides {1, 2}:
    // every pair and coprime P:D within 16 GPUs, 44; of DP 2 + EP 2 sides
    // (both sides of one kind, as simulate --enable-expert-parallel makes
    // them): P x 2 + D x 2 <= 16, P and D up to 4 and coprime: 1:1, 1:2,
    // 1:3, 1:4, 2:1, 2:3, 3:1, 3:2, 3:4, 4:1, 4:3, 11. 64 in all.
    const std::vector<std::string> args = {
        "recommend", "--draws", "0",  "--model", "mixtral-8x7b",     "--slo",      "ttft=2s,tpot=50ms", "--rate", "20", "--gpus", "h100-sxm", "--max-gpus", "2",
        "--requests", "200",     "--price-per-hour", "h100-sxm=2", "--disaggregated",   "--top",  "64"};
    std::vector<std::string> json = args;
    json.push_back("--json");
    const Run r = Run::kvplan(json);
    INFO(r.command << "\n" << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["candidates_tried"].get<std::int64_t>() == 64);
    int dp_units = 0, dp_qualified = 0;
    for (const auto* list : {&j["candidates"], &j["rejected"]})
        for (const auto& c : *list) {
            if (!c["disaggregated"].get<bool>() || c["prefill_dp"] == 1) continue;
            ++dp_units;
            CHECK(c["prefill_dp"] == 2);
            CHECK(c["decode_dp"] == 2);
            CHECK(c["prefill_tp"] == 1);
            CHECK(c["decode_tp"] == 1);
            if (list != &j["candidates"]) continue;
            ++dp_qualified;
            // A unit of P + D groups of 2 GPUs; 2 USD per GPU-hour.
            const auto p = c["prefill_replicas"].get<std::int64_t>(), d = c["decode_replicas"].get<std::int64_t>();
            const auto replicas = c["replicas"].get<std::int64_t>();
            CHECK(c["gpus_total"].get<std::int64_t>() == replicas * (2 * p + 2 * d));
            CHECK(c["usd_per_hour"].get<double>() == Approx(2.0 * static_cast<double>(replicas * (2 * p + 2 * d))));
            for (const char* side : {"vllm_prefill_command", "vllm_decode_command"}) {
                CHECK_THAT(c[side].get<std::string>(), Catch::Contains("--tensor-parallel-size 1 --data-parallel-size 2 --enable-expert-parallel"));
                CHECK_THAT(c[side].get<std::string>(), Catch::Contains(R"("kv_connector":"NixlConnector")"));
            }
        }
    CHECK(dp_units == 11);
    CHECK(dp_qualified > 0);
    const Run t = Run::kvplan(args);
    CHECK_THAT(t.out, Catch::Contains("1 ep2/1 ep2"));
    CHECK_THAT(t.out, Catch::Contains("1 epN: data-parallel attention on N GPUs"));
    CHECK(widest_line(t.out) <= 100);
}

TEST_CASE("recommend (analytic) --spec-method: every candidate speculative, its commands carrying the proposer") {
    // Llama-3.1-70B on H100s at 8,192 tokens with Llama-3.1-8B drafting 4
    // tokens at acceptance 0.7 (E = 1 + 0.7 + 0.49 + 0.343 + 0.2401 = 2.7731).
    // The draft's 32 query and 8 KV heads split over TP 1, 2, 4 and 8 alike;
    // GPT-2's 12 heads do not split over 8, so that TP is not tried.
    const std::vector<std::string> args = {
        "recommend", "--model",       "llama-3.1-70b", "--gpus",        "h100-sxm",     "--context",     "8192", "--ttft",       "2",  "--tpot",
        "0.03",      "--spec-method", "draft",         "--draft-model", "llama-3.1-8b", "--spec-tokens", "4",    "--acceptance", "0.7"};
    std::vector<std::string> json = args;
    json.push_back("--json");
    const Run r = Run::kvplan(json);
    INFO(r.command << "\n" << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    REQUIRE_FALSE(j["candidates"].empty());
    for (const auto& c : j["candidates"]) {
        CHECK(c["tpot_s"].get<double>() <= 0.03);
        CHECK_THAT(c["vllm_command"].get<std::string>(),
                   Catch::Contains(R"(--speculative-config '{"model":"meta-llama/Llama-3.1-8B-Instruct","num_speculative_tokens":4}')"));
        CHECK_THAT(c["sglang_command"].get<std::string>(), Catch::Contains("--speculative-algorithm STANDALONE"));
    }
    const Run t = Run::kvplan(args);
    CHECK_THAT(t.out, Catch::Contains("note: speculative decoding (draft, K 4)"));
    CHECK_THAT(t.out, Catch::Contains("trtllm-serve takes a separate draft model in its YAML's speculative_config"));
    CHECK(widest_line(t.out) <= 100);
    const Run gpt2 = Run::kvplan({"recommend", "--model",      "llama-3.1-70b", "--gpus",        "h100-sxm", "--context",     "8192", "--ttft",
                                  "2",         "--tpot",       "0.05",          "--spec-method", "draft",    "--draft-model", "gpt2", "--spec-tokens",
                                  "2",         "--acceptance", "0.5",           "--analytic"});
    CHECK_THAT(gpt2.out, Catch::Contains("the draft model's heads do not split over TP 8: not tried"));
    // The flags are checked as roofline checks them.
    const Run bad =
        Run::kvplan({"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "1", "--tpot", "0.01", "--spec-method", "eagle"});
    CHECK(bad.exit_code == 2);
    CHECK(bad.out.empty());
    CHECK_THAT(bad.err, Catch::Contains("--spec-method eagle needs --spec-tokens K"));
}

TEST_CASE("recommend --slo --pp: pipelines of TP x PP within --max-gpus, vLLM only, each fleet and command by hand") {
    // --pp 1,2 --max-gpus 2 on an H100: TP 1, TP 2 and TP 1 x PP 2, each
    // with three knob settings (9 candidates); with SGLang, whose pipeline
    // is not simulated, --pp 2 is refused.
    const std::vector<std::string> args = {
        "recommend", "--draws", "0",  "--model", "llama-3.1-8b", "--slo", "ttft=2s,tpot=50ms", "--rate",     "30",    "--gpus", "h100-sxm",
        "--max-gpus", "2",       "--requests",   "200",   "--price-per-hour",  "h100-sxm=2", "--top", "9",      "--pp",
        "1,2"};
    std::vector<std::string> json = args;
    json.push_back("--json");
    const Run r = Run::kvplan(json);
    INFO(r.command << "\n" << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["candidates_tried"].get<std::int64_t>() == 9);
    int pipelines = 0;
    for (const auto& c : j["candidates"]) {
        const auto tp = c["tp"].get<std::int64_t>(), pp = c["pp"].get<std::int64_t>(), replicas = c["replicas"].get<std::int64_t>();
        // Every replica holds TP x PP GPUs, 2 USD each an hour.
        CHECK(c["gpus_total"].get<std::int64_t>() == replicas * tp * pp);
        CHECK(c["usd_per_hour"].get<double>() == Approx(2.0 * static_cast<double>(replicas * tp * pp)));
        if (pp == 1) continue;
        ++pipelines;
        CHECK(tp == 1);
        CHECK(pp == 2);
        CHECK_THAT(c["vllm_command"].get<std::string>(), Catch::Contains("--tensor-parallel-size 1 --pipeline-parallel-size 2"));
        CHECK_THAT(c["sglang_command"].get<std::string>(), Catch::Contains("--tp 1 --pp-size 2"));
    }
    CHECK(pipelines > 0);
    const Run t = Run::kvplan(args);
    CHECK_THAT(t.out, Catch::Contains("h100-sxm  1 pp2"));
    CHECK(widest_line(t.out) <= 100);
    std::vector<std::string> sglang = json;
    sglang.insert(sglang.end(), {"--engine", "sglang"});
    const Run g = Run::kvplan(sglang);
    CHECK(g.exit_code == 2);
    CHECK(g.out.empty());
    CHECK_THAT(g.err, Catch::Contains("--pp 1,2: pipelines are simulated with vLLM's engine only"));
    // --pp auto (the default) follows vLLM's guide: pipelines on an L40S
    // (PCIe, no NVLink: 9 candidates), none on an H100 whose TP 2 already
    // covers --max-gpus 2 (6); with SGLang none anywhere (6).
    auto tried = [](const std::vector<std::string>& a) {
        const Run x = Run::kvplan(a);
        INFO(x.command << "\n" << x.err);
        REQUIRE(x.out.find('{') != std::string::npos);
        return nlohmann::json::parse(x.out)["candidates_tried"].get<std::int64_t>();
    };
    const std::vector<std::string> base = {"recommend", "--draws", "0",  "--model", "llama-3.1-8b", "--slo", "ttft=2s,tpot=50ms", "--rate", "5", "--max-gpus", "2",
                                           "--requests", "100",     "--json",       "--gpus"};
    auto with = [&](std::initializer_list<std::string> more) {
        std::vector<std::string> a = base;
        a.insert(a.end(), more);
        return a;
    };
    CHECK(tried(with({"l40s"})) == 9);
    CHECK(tried(with({"h100-sxm"})) == 6);
    CHECK(tried(with({"l40s", "--engine", "sglang"})) == 6);
    const Run bad = Run::kvplan(with({"l40s", "--pp", "3x"}));
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.err, Catch::Contains("--pp 3x: expected auto or a list of pipeline stage counts from 1 to 8"));
}

TEST_CASE("recommend --slo on a mixture-of-experts model: DP + EP layouts of 2, 4 and 8 GPUs beside TP, simulated as lockstep ranks") {
    // DeepSeek-V3 on an H200: TP 1, 2, 4, 8 and DP 2, 4, 8 (TP 1 each, EP =
    // DP), each with three knob settings: 21 candidates. A DP 8 replica
    // holds 8 GPUs; its vLLM command gives each of the 8 engine cores its
    // share of the replica's sequences, SGLang's the totals.
    const std::vector<std::string> args = {
        "recommend", "--draws", "0",   "--model",    "deepseek-v3",  "--gpus",     "h200",       "--slo", "ttft=5s,tpot=200ms", "--rate",   "20",
        "--input-len", "fixed:8000", "--output-len", "fixed:1000", "--requests", "300",   "--price-per-hour",   "h200=3.5", "--top",
        "10"};
    std::vector<std::string> json = args;
    json.push_back("--json");
    const Run r = Run::kvplan(json);
    INFO(r.command << "\n" << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["candidates_tried"].get<std::int64_t>() == 21);
    int layouts = 0;
    for (const auto& c : j["candidates"]) {
        const auto dp = c["attention_dp"].get<std::int64_t>(), tp = c["tp"].get<std::int64_t>(), replicas = c["replicas"].get<std::int64_t>();
        CHECK(c["gpus_total"].get<std::int64_t>() == replicas * tp * dp);
        CHECK(c["usd_per_hour"].get<double>() == Approx(3.5 * static_cast<double>(replicas * tp * dp)));
        if (dp == 1) continue;
        ++layouts;
        CHECK(tp == 1);
        CHECK(c["ep"] == dp);
        const std::string vllm = c["vllm_command"].get<std::string>();
        CHECK_THAT(vllm, Catch::Contains(fmt::format("--tensor-parallel-size 1 --data-parallel-size {} --enable-expert-parallel", dp)));
        CHECK_THAT(c["sglang_command"].get<std::string>(), Catch::Contains(fmt::format("--tp {} --dp {} --enable-dp-attention --ep {}", dp, dp, dp)));
        if (c["knobs"] == "latency") CHECK_THAT(vllm, Catch::Contains("--max-num-seqs 64 "));  // per engine core
    }
    CHECK(layouts > 0);
    const Run t = Run::kvplan(args);
    CHECK_THAT(t.out, Catch::Contains("h200  1 ep8"));
    CHECK(widest_line(t.out) <= 100);
}

TEST_CASE("recommend --slo --engine sglang on a mixture-of-experts model: SGLang's DP attention layouts, simulated, with the server's totals") {
    // The same 21 candidates with SGLang's schedulers: DP 2, 4 and 8 are
    // --tp N --dp N --ep N (N GPUs in all, attention TP 1), simulated as
    // lockstep DP attention ranks. The knobs are per rank and the command
    // carries SGLang's totals, which it divides over the ranks: the default
    // chunk, 8,192 / 8 = 1,024 a rank, goes back as 8,192; the latency
    // setting's 64 sequences a rank as --max-running-requests 64 x 8 = 512.
    const Run r =
        Run::kvplan({"recommend", "--draws", "0", "--model", "deepseek-v3", "--gpus",     "h200",         "--engine",   "sglang",     "--slo", "ttft=5s,tpot=200ms",
                     "--rate",    "20",      "--input-len", "fixed:8000", "--output-len", "fixed:1000", "--requests", "300",   "--top",
                     "10",        "--json"});
    INFO(r.command << "\n" << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["candidates_tried"].get<std::int64_t>() == 21);
    int layouts = 0;
    for (const auto& c : j["candidates"]) {
        const auto dp = c["attention_dp"].get<std::int64_t>();
        if (dp == 1) continue;
        ++layouts;
        CHECK(c["tp"] == 1);
        CHECK(c["ep"] == dp);
        CHECK(c["gpus_total"].get<std::int64_t>() == c["replicas"].get<std::int64_t>() * dp);
        const std::string sg = c["sglang_command"].get<std::string>();
        CHECK_THAT(sg, Catch::Contains(fmt::format("--tp {} --dp {} --enable-dp-attention --ep {}", dp, dp, dp)));
        if (dp == 8 && c["knobs"] == "default") CHECK_THAT(sg, Catch::Contains("--chunked-prefill-size 8192 "));
        if (dp == 8 && c["knobs"] == "latency") CHECK_THAT(sg, Catch::Contains("--max-running-requests 512 "));
    }
    CHECK(layouts > 0);
}

TEST_CASE("recommend --slo --max-nodes 2: a DP 16 + EP 16 layout over two nodes of 8, its commands per node") {
    // The 21 one-node candidates (above) and DP 16 over 2 nodes of 8 H200s
    // (EP 16 divides the 256 experts), three knob settings: 24. Its
    // all-to-all crosses the NIC (ib-ndr) for the other node's ranks.
    // TTFT 1 s: 200 requests arriving at once would take over a second to
    // prefill, so the search finds the rate the layout sustains (at 5 s the
    // whole run passed as a burst at any rate).
    const std::vector<std::string> args = {
        "recommend", "--draws", "0",   "--model",    "deepseek-v3",  "--gpus",    "h200",       "--slo", "ttft=1s,tpot=200ms", "--rate", "20",
        "--input-len", "fixed:2000", "--output-len", "fixed:200", "--requests", "200",   "--max-nodes",        "2",      "--top",
        "30"};
    std::vector<std::string> json = args;
    json.push_back("--json");
    const Run r = Run::kvplan(json);
    INFO(r.command << "\n" << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["candidates_tried"].get<std::int64_t>() == 24);
    int two_nodes = 0;
    for (const auto& c : j["candidates"]) {
        if (c["attention_dp"] != 16) {
            CHECK(c["nodes_per_replica"] == 1);
            continue;
        }
        ++two_nodes;
        CHECK(c["nodes_per_replica"] == 2);
        CHECK(c["gpus_total"].get<std::int64_t>() == c["replicas"].get<std::int64_t>() * 16);
        CHECK_THAT(c["vllm_command"].get<std::string>(),
                   Catch::Contains("--data-parallel-size 16 --data-parallel-size-local 8 --data-parallel-address HEAD_IP"));
        CHECK_THAT(c["sglang_command"].get<std::string>(), Catch::Contains("--tp 16 --dp 16 --enable-dp-attention --ep 16 --nnodes 2 --node-rank 0"));
        // One command per node: the second runs headless from global rank 8, or as SGLang's node 1.
        REQUIRE(c["vllm_node_commands"].size() == 2);
        CHECK(c["vllm_node_commands"][0] == c["vllm_command"]);
        CHECK_THAT(c["vllm_node_commands"][1].get<std::string>(),
                   Catch::Contains("--data-parallel-size 16 --headless --data-parallel-size-local 8 --data-parallel-start-rank 8 "
                                   "--data-parallel-address HEAD_IP"));
        REQUIRE(c["sglang_node_commands"].size() == 2);
        CHECK_THAT(c["sglang_node_commands"][1].get<std::string>(), Catch::Contains("--nnodes 2 --node-rank 1 --dist-init-addr HEAD_IP:5000"));
    }
    CHECK(two_nodes > 0);
    // The placement flags need --max-nodes; an unknown NIC stops the search.
    for (const std::vector<std::string>& extra : {std::vector<std::string>{"--gpus-per-node", "4"}, std::vector<std::string>{"--nic", "roce-400"},
                                                  std::vector<std::string>{"--max-nodes", "2", "--nic", "carrier-pigeon"}}) {
        std::vector<std::string> a = {"recommend", "--draws", "0", "--model", "deepseek-v3", "--gpus",    "h200",         "--slo",   "ttft=5s",
                                      "--rate",    "1",       "--input-len", "fixed:100", "--output-len", "fixed:10"};
        a.insert(a.end(), extra.begin(), extra.end());
        const Run bad = Run::kvplan(a);
        CHECK(bad.exit_code == 2);
        CHECK(bad.out.empty());
    }
}

TEST_CASE("recommend (analytic) --max-nodes 4: DP + EP layouts over 2 and 4 nodes, each priced as roofline --nodes prices it") {
    // DeepSeek-V3 on H200s at 8,192 tokens, TPOT <= 30 ms: TP 8 and DP 8 + EP 8
    // meet it; so do DP 16 + EP 16 over 2 nodes and DP 32 + EP 32 over 4,
    // whose MoE dispatch is vLLM's default all-gather + reduce-scatter
    // (docs/collectives.md): larger layouts than the device's candidates,
    // counted as such. DP 32's step is the one roofline prices for that
    // layout on 4 nodes.
    const Run r = Run::kvplan({"recommend", "--model", "deepseek-v3", "--gpus", "h200", "--context", "8192", "--ttft", "2", "--tpot", "0.03",
                               "--max-nodes", "4", "--json"});
    INFO(r.command << "\n" << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    // TP 1, 2, 4, 8 and DP + EP on 2, 4, 8 GPUs and 2, 4 nodes of 8.
    CHECK(j["configurations"] == 9);
    CHECK(j["larger_tp_meeting"] == 2);
    for (const auto& c : j["rejected"]) CHECK(c["attention_dp"].get<int>() < 16);
    const Run roof = Run::kvplan({"roofline", "--model", "deepseek-v3", "--gpu", "h200", "--dp", "32", "--enable-expert-parallel", "--nodes", "4",
                                  "--batch", "1", "--context", "8192", "--json"});
    REQUIRE(roof.exit_code == 0);
    const auto rj = nlohmann::json::parse(roof.out);
    CHECK(rj["layout"]["nodes"] == 4);
    CHECK(rj["rows"][0]["decode_step_s"].get<double>() < 0.03);
    for (const auto& c : j["candidates"]) CHECK(c["nodes_per_replica"] == 1);
    // --gpus-per-node and --nic need --max-nodes here too.
    const Run bad = Run::kvplan({"recommend", "--model", "deepseek-v3", "--context", "8192", "--ttft", "2", "--tpot", "0.03", "--nic", "roce-400"});
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.err, Catch::Contains("add --max-nodes N"));
}

TEST_CASE("recommend --slo --two-batch-overlap: the DP + EP layouts run as two micro-batches, their commands say so") {
    const Run r = Run::kvplan({"recommend", "--draws", "0", "--model", "deepseek-v3", "--gpus", "h200", "--slo", "ttft=1s,tpot=200ms", "--rate", "20", "--input-len",
                               "fixed:2000", "--output-len", "fixed:200", "--requests", "200", "--two-batch-overlap", "--top", "30", "--json"});
    INFO(r.command << "\n" << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    int layouts = 0;
    for (const auto& c : j["candidates"]) {
        const bool ep = c["attention_dp"].get<std::int64_t>() > 1;
        layouts += ep;
        CHECK(c["two_batch_overlap"] == ep);  // TP candidates have no all-to-all to hide
        CHECK((c["vllm_command"].get<std::string>().find("--enable-dbo") != std::string::npos) == ep);
        CHECK((c["sglang_command"].get<std::string>().find("--enable-two-batch-overlap") != std::string::npos) == ep);
    }
    CHECK(layouts > 0);
    const Run bad = Run::kvplan({"recommend", "--draws", "0", "--model", "deepseek-v3", "--gpus", "h200", "--slo", "ttft=5s", "--rate", "1", "--input-len",
                                 "fixed:100", "--output-len", "fixed:10", "--two-batch-overlap", "--disaggregated"});
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.err, Catch::Contains("--two-batch-overlap"));
}

TEST_CASE("recommend --slo --spec-method mtp: every candidate simulated with the MTP proposer, its commands carrying it") {
    // As `simulate --spec-method mtp --spec-tokens 1 --acceptance 0.8` runs
    // each layout (tests/cli/simulate_dp_cmd_test.cpp derives its pool); the
    // commands: vLLM's --speculative-config, SGLang's EAGLE drafter of K = 1
    // step and K + 1 = 2 draft tokens.
    const Run r = Run::kvplan(
        {"recommend", "--draws", "0",   "--model",      "deepseek-v3",  "--gpus",    "h200",       "--slo", "ttft=5s,tpot=200ms", "--rate", "20",
         "--input-len", "fixed:2000",   "--output-len", "fixed:200", "--requests", "200",   "--spec-method",      "mtp",    "--spec-tokens",
         "1",           "--acceptance", "0.8",          "--json"});
    INFO(r.command << "\n" << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["candidates_tried"].get<std::int64_t>() == 21);
    REQUIRE(!j["candidates"].empty());
    for (const auto& c : j["candidates"]) {
        CHECK_THAT(c["vllm_command"].get<std::string>(), Catch::EndsWith(R"(--speculative-config '{"method":"mtp","num_speculative_tokens":1}')"));
        CHECK_THAT(
            c["sglang_command"].get<std::string>(),
            Catch::Contains("--speculative-algorithm EAGLE --speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens 2"));
    }
    const std::vector<std::string> base = {
        "recommend", "--draws", "0", "--model",      "deepseek-v3", "--gpus",        "h200", "--slo",         "ttft=5s", "--rate",       "1",  "--input-len",
        "fixed:100", "--output-len", "fixed:10",    "--spec-method", "mtp",  "--spec-tokens", "1",       "--acceptance", "0.8"};
    for (const std::vector<std::string>& extra :
         {std::vector<std::string>{"--engine", "sglang"}, std::vector<std::string>{"--disaggregated"}, std::vector<std::string>{"--pp", "1,2"}}) {
        std::vector<std::string> a = base;
        a.insert(a.end(), extra.begin(), extra.end());
        const Run bad = Run::kvplan(a);
        CHECK(bad.exit_code == 2);
        CHECK_THAT(bad.err, Catch::Contains("--spec-method"));
    }
}

TEST_CASE("recommend --slo prices steps with the efficiency flags: a 100 ms step overhead misses a 50 ms TPOT everywhere") {
    // Every decode step costs at least the 100 ms fixed overhead, so no
    // request's TPOT can be under 100 ms, alone or not: nothing qualifies
    // and TPOT binds, at more than 100 ms for a request alone.
    const Run r = Run::kvplan({"recommend", "--draws", "0", "--model", "llama-3.1-8b", "--slo", "ttft=2s,tpot=50ms", "--rate", "1", "--gpus", "h100-sxm",
                               "--max-gpus", "1", "--requests", "50", "--step-overhead-ms", "100", "--json"});
    INFO(r.command << "\n" << r.out << r.err);
    CHECK(r.exit_code == 1);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j["candidates"].empty());
    for (const auto& c : j["rejected"]) CHECK_THAT(c["reason"].get<std::string>(), Catch::StartsWith("slo: tpot is 1"));
    CHECK_THAT(j["nearest"].get<std::string>(), Catch::Contains("The tpot target binds"));
}

TEST_CASE("recommend tries DP attention + EP for a mixture-of-experts model: DeepSeek-V3 on 8 x H200 beats TP 8 when TPOT allows its batch") {
    // vLLM --tensor-parallel-size 1 --data-parallel-size 8 --enable-expert-parallel
    // holds 90 sequences of 4,096 tokens on each of 8 ranks (`kvplan concurrency
    // --model deepseek-v3 --gpu h200 --engine vllm --tp 1 --dp 8
    // --enable-expert-parallel --context 4096` says the same), 720 in all,
    // where TP 8 replicates the MLA latent and holds 152.
    const std::vector<std::string> a{"recommend", "--model", "deepseek-v3", "--gpus", "h200", "--context", "4096", "--ttft", "2", "--json"};
    auto args = a;
    args.insert(args.end(), {"--tpot", "0.1"});
    const Run r = Run::kvplan(args);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["candidates"].size() == 2);
    const auto& ep = j["candidates"][0];
    CHECK(ep["attention_dp"] == 8);
    CHECK(ep["ep"] == 8);
    CHECK(ep["tp"] == 1);
    CHECK(ep["gpus"] == 8);
    CHECK(ep["max_requests"] == 720);
    CHECK(ep["batch"] == 720);  // memory binds before the 100 ms TPOT
    CHECK(ep["tokens_per_s_per_gpu"].get<double>() == Approx(720 / ep["tpot_s"].get<double>() / 8));
    CHECK(j["candidates"][1]["tp"] == 8);
    CHECK(j["candidates"][1]["max_requests"] == 152);  // tests/core/memory/scale_out_test.cpp
    // Flags per engine: vLLM's per engine core (720 / 8 = 90), SGLang's the server's totals it divides by --dp.
    CHECK_THAT(ep["vllm_flags"].get<std::string>(),
               Catch::StartsWith("--tensor-parallel-size 1 --data-parallel-size 8 --enable-expert-parallel --max-num-seqs 90 "));
    CHECK_THAT(ep["sglang_flags"].get<std::string>(), Catch::StartsWith("--tp 8 --dp 8 --enable-dp-attention --ep 8 --max-running-requests 720 "));
    // TensorRT-LLM's in its YAML (llm_args.py): TP over every GPU, EP 8, each attention-DP rank's 90.
    CHECK(ep["trtllm_flags"] == "--extra_llm_api_options trtllm.yaml");
    CHECK_THAT(ep["trtllm_yaml"].get<std::string>(),
               Catch::StartsWith("tensor_parallel_size: 8\nmoe_expert_parallel_size: 8\nenable_attention_dp: true\nmax_batch_size: 90\n"));
    // At 50 ms the layout's batch falls to the TPOT bound.
    args = a;
    args.insert(args.end(), {"--tpot", "0.05"});
    const auto tight = nlohmann::json::parse(Run::kvplan(args).out);
    REQUIRE(tight["candidates"].size() == 2);
    const auto& tight_ep = tight["candidates"][0]["attention_dp"] == 8 ? tight["candidates"][0] : tight["candidates"][1];
    CHECK(tight_ep["attention_dp"] == 8);
    CHECK(tight_ep["batch"].get<int>() < 720);
    CHECK(tight_ep["tpot_s"].get<double>() <= 0.05);
    // A dense model gets no such layout.
    const auto dense = nlohmann::json::parse(
        Run::kvplan({"recommend", "--model", "llama-3.1-8b", "--gpus", "h100-sxm", "--context", "8192", "--ttft", "1", "--tpot", "0.05", "--json"})
            .out);
    for (const auto& c : dense["candidates"]) CHECK(c["attention_dp"] == 1);
}
