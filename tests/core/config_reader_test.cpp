// One rule for numbers from files (docs/errors.md, "Range limits"): every
// reader turns a JSON number into an integer through ConfigReader, which
// refuses anything outside the field's range with a message naming the
// file, the field, the range and the value. Each reader is fed the same
// hostile values: 1e308, -1, 2^63 (as an integer and as a float), a
// NaN-like string, null (where the field is required), a string, an array.
#include "core/config_reader.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/gate/baseline.hpp"
#include "core/hardware.hpp"
#include "core/model/config_parser.hpp"
#include "core/speed/calibration.hpp"

using namespace kvplan;
using nlohmann::json;

namespace {

// The hostile values, as JSON text, and a fragment each message must hold.
struct Hostile {
    const char* text;
    const char* found;
};
const std::vector<Hostile> kHostile = {
    {"1e308", "expected an integer in ["},
    {"-1", "expected an integer in ["},
    {"9223372036854775808", "expected an integer in ["},
    {"9223372036854775808.0", "expected an integer in ["},
    {"18446744073709551616", "expected an integer"},
    {"\"NaN\"", "string"},
    {"\"12\"", "string"},
    {"[4096]", "array"},
    {"{}", "object"},
    {"true", "boolean"},
};

std::string message_of(const std::function<void()>& read) {
    try {
        read();
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::Data);
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("ConfigReader::get_int refuses every hostile value, naming file, field and range") {
    for (const Hostile& h : kHostile) {
        INFO(h.text);
        const json doc = json::parse(std::string("{\"n\": ") + h.text + "}");
        const ConfigReader r(doc, "f.json");
        const std::string m = message_of([&] { (void)r.get_int({"n"}, 0, INT64_MAX); });
        CHECK_THAT(m, Catch::StartsWith("f.json: n: "));
        CHECK_THAT(m, Catch::Contains(h.found));
    }
    // The boundaries themselves are accepted exactly.
    const json edge = json::parse(R"({"max": 9223372036854775807, "min": -9223372036854775808, "f": 9007199254740992.0})");
    const ConfigReader r(edge, "f.json");
    CHECK(r.get_int({"max"}, INT64_MIN, INT64_MAX) == INT64_MAX);
    CHECK(r.get_int({"min"}, INT64_MIN, INT64_MAX) == INT64_MIN);
    CHECK(r.get_int({"f"}, 0, INT64_MAX) == 9007199254740992);  // 2^53, integral float
    // null counts as absent; require_* says so.
    const json null_doc = json::parse(R"({"n": null, "l": null})");
    const ConfigReader nr(null_doc, "f.json");
    CHECK_FALSE(nr.get_int({"n"}, 0, 10).has_value());
    CHECK_THAT(message_of([&] { (void)nr.require_int({"n"}, 0, 10); }), Catch::Contains("f.json: n: required field is missing"));
    CHECK_THAT(message_of([&] { (void)nr.require_int_list("l", 1, 10); }), Catch::Contains("f.json: l: required field is missing or null"));
}

TEST_CASE("the config reader refuses hostile num_hidden_layers values") {
    for (const Hostile& h : kHostile) {
        INFO(h.text);
        const json config = json::parse(std::string(R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
            "intermediate_size": 14336, "vocab_size": 32000, "num_hidden_layers": )") +
                                        h.text + "}");
        const std::string m = message_of([&] { (void)parse_model_config(config, "c.json"); });
        CHECK_THAT(m, Catch::StartsWith("c.json: num_hidden_layers: "));
    }
}

TEST_CASE("the baseline reader refuses hostile tp and schema_version values") {
    for (const Hostile& h : kHostile) {
        INFO(h.text);
        const json tp = json::parse(std::string(R"({"schema_version": 1, "scenarios": [{"name": "a", "model": "m", "gpu": "h100-sxm",
            "context_tokens": 4096, "expected": {}, "tp": )") +
                                    h.text + "}]}");
        CHECK_THAT(message_of([&] { (void)parse_baseline(tp, "b.json", false); }), Catch::StartsWith("b.json: scenarios[0].tp: "));
        const json version = json::parse(std::string(R"({"scenarios": [], "schema_version": )") + h.text + "}");
        CHECK_THAT(message_of([&] { (void)parse_baseline(version, "b.json", false); }), Catch::StartsWith("b.json: schema_version: "));
    }
}

TEST_CASE("the calibration reader refuses hostile schema_version values") {
    for (const Hostile& h : kHostile) {
        INFO(h.text);
        const json c = json::parse(std::string(R"({"device": "cpu", "measured_bandwidth_bytes_per_s": 1e10, "schema_version": )") + h.text + "}");
        CHECK_THAT(message_of([&] { (void)parse_calibration(c, "cal.json"); }), Catch::StartsWith("cal.json: schema_version: "));
    }
}

TEST_CASE("the hardware database reader refuses hostile memory_bytes values") {
    for (const Hostile& h : kHostile) {
        INFO(h.text);
        const json db = json::parse(std::string(R"({"schema_version": 1, "gpus": [{"id": "x", "memory_bandwidth_bytes_per_s": 1000,
            "memory_bytes": )") + h.text +
                                    "}]}");
        CHECK_THAT(message_of([&] { (void)parse_gpu_database(db, "gpus.json"); }), Catch::StartsWith("gpus.json: gpus[0].memory_bytes: "));
    }
}
