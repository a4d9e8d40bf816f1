// The unit rule of docs/style.md, walked over every printer's field list
// (report/fields.hpp): a JSON key whose value is a number names its unit.
#include "report/fields.hpp"

#include <set>
#include <string>

#include <catch2/catch.hpp>

using namespace kvplan;

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The units the JSON keys use: bytes, seconds (and milliseconds), tokens,
// TFLOP/s, bits, dollars, requests per second (rps); a rate or a share of one reads as the unit divided
// by something ("_bytes_per_s", "_bytes_per_s_per_direction", "_per_token").
bool names_unit(std::string key) {
    static const char* const kUnits[] = {"_bytes", "_s", "_ms", "_tokens", "_tflops", "_bits", "_usd", "_gib", "_rps"};
    for (;;) {
        for (const char* unit : kUnits)
            if (ends_with(key, unit) || key == std::string(unit).substr(1)) return true;
        // Strip one "_per_X" (a denominator) and look again.
        const std::size_t per = key.rfind("_per_");
        if (per == std::string::npos || per == 0) return false;
        key = key.substr(0, per);
    }
}

// Numbers with no unit, each with its reason.
const std::set<std::string> kUnitless = {
    // counts of things that are not tokens or bytes
    "layers", "tp", "batch",
    // recommend: a place in the ranking; GPUs, ranks, stages, replicas, sequences, requests
    "rank", "pp", "dp", "attention_dp", "gpus", "replicas", "gpus_total", "prefill_replicas", "decode_replicas", "max_num_seqs", "max_requests",
    // tokens, under the engines' flag name (--max-model-len)
    "max_model_len",
    // a share of requests (meeting every SLO)
    "slo_attainment",
    // ratios: fractions of a datasheet figure, efficiencies, factors
    "kv_fraction", "weights_fraction", "flops_fraction", "link_fraction", "moe_efficiency", "tp_flops_loss", "kernel_factor",
    "change_fraction",  // diff: (B - A) / A
    // diff's two values: their unit is the row's figure key's (decode_step_s, kv_cache_tokens)
    "a", "b",
    // a distribution's statistics: the unit is the key that holds them (simulate's ttft_s)
    "mean", "p50", "p90", "p99", "max",
    // keys older than the rule, kept so that the JSON stays what users parse
    "tokens_held",  // size's layer groups: tokens each layer holds a sequence (a count of tokens)
};

}  // namespace

TEST_CASE("the unit rule's check: what it accepts and refuses") {
    CHECK(names_unit("memory_bytes"));
    CHECK(names_unit("interconnect_bytes_per_s_per_direction"));
    CHECK(names_unit("tokens_per_s_per_user"));
    CHECK(names_unit("bytes_per_token"));
    CHECK(names_unit("step_overhead_s"));
    CHECK_FALSE(names_unit("memory"));
    CHECK_FALSE(names_unit("tokens_held"));
}

TEST_CASE("every field list: a numeric JSON key names its unit or is a listed unitless one") {
    const std::vector<FieldListInfo> lists = all_field_lists();
    REQUIRE_FALSE(lists.empty());
    for (const FieldListInfo& list : lists) {
        std::set<std::string> seen;
        for (const auto& [key, kind] : list.keys) {
            INFO(list.name << ": " << key);
            CHECK(seen.insert(key).second);  // one member per key
            if (kind == FieldKind::Number || kind == FieldKind::Numbers) CHECK((names_unit(key) || kUnitless.count(key) == 1));
        }
    }
}
