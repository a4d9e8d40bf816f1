#include "core/gate/baseline.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "core/config_reader.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/memory/engine.hpp"
#include "core/model/config_parts.hpp"

namespace kvplan {

double round_significant(double value, int digits) {
    if (value == 0 || !std::isfinite(value)) return value;
    // Through text: the shortest decimal a reader sees is the value kept.
    char text[64];
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    return std::strtod(text, nullptr);
}

bool scenario_wants(const ScenarioInputs& in, Figure f) {
    return !figure_spec(f).needs_batch || in.batch.has_value();
}

namespace {

// Keys a scenario may have; anything else is a typo worth an error.
const std::set<std::string> kScenarioKeys = {"name",
                                             "description",
                                             "model",
                                             "gpu",
                                             "engine",
                                             "tp",
                                             "pp",
                                             "dp",
                                             "ep",
                                             "enable_expert_parallel",
                                             "redundant_experts",
                                             "moe_dense_tp_size",
                                             "moe_a2a_backend",
                                             "nodes",
                                             "gpus_per_node",
                                             "nic",
                                             "two_batch_overlap",
                                             "context_tokens",
                                             "kv_dtype",
                                             "mem_util",
                                             "batch",
                                             "weights_dtype",
                                             "max_model_len",
                                             "max_num_seqs",
                                             "max_num_batched_tokens",
                                             "block_size",
                                             "calibration",
                                             "expected"};
constexpr const char* kScenarioKeyList =
    "name, model, gpu, engine, tp, pp, dp, ep, enable_expert_parallel, redundant_experts, moe_dense_tp_size, moe_a2a_backend, "
    "nodes, gpus_per_node, nic, two_batch_overlap, context_tokens, kv_dtype, mem_util, batch, weights_dtype, max_model_len, max_num_seqs, "
    "max_num_batched_tokens, block_size, calibration, expected, description";
const std::set<std::string> kTopKeys = {"schema_version",    "description", "kvplan_version", "kvplan_commit",
                                        "tolerance_percent", "models",      "scenarios",      "tolerance_percent_by_figure"};
// The order baseline_json writes them in, and set_provenance restores.
// The kvplan that computed the figures heads the file; how each model resolved follows the scenarios.
constexpr const char* kTopOrder[] = {
    "schema_version", "description", "kvplan_version", "kvplan_commit", "tolerance_percent", "tolerance_percent_by_figure", "scenarios", "models"};
const std::set<std::string> kModelKeys = {"source", "repo_id", "revision", "ref", "config_sha256"};

[[noreturn]] void fail(const std::string& source, const std::string& field, const std::string& message) {
    data_error(source + ": " + field + ": " + message);
}

FigureValue read_figure(const nlohmann::json& value, const FigureSpec& spec, const std::string& source, const std::string& field) {
    if (value.is_null()) {
        if (spec.figure != Figure::KvCacheTokens) fail(source, field, "expected a number, found null");
        return FigureValue::null();
    }
    if (spec.integer) {
        if (!value.is_number_integer())
            fail(source, field, "expected an integer, found " + (value.is_number() ? value.dump() : json_type_name(value)));
        if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
            fail(source, field, "expected an integer below 2^63, found " + value.dump());
        const std::int64_t v = value.get<std::int64_t>();
        if (v < 0) fail(source, field, "expected a non-negative integer, found " + value.dump());
        return FigureValue::of(v);
    }
    if (!value.is_number()) fail(source, field, "expected a number, found " + json_type_name(value));
    const double v = value.get<double>();
    if (!(v >= 0) || !std::isfinite(v)) fail(source, field, "expected a non-negative number, found " + value.dump());
    return FigureValue::of_real(v);
}

Scenario read_scenario(const nlohmann::json& object, const std::string& source, std::size_t index, bool require_expected) {
    const std::string at = "scenarios[" + std::to_string(index) + "]";
    if (!object.is_object()) fail(source, at, "expected an object, found " + json_type_name(object));
    for (const auto& [key, value] : object.items())
        if (!kScenarioKeys.count(key)) fail(source, at + "." + key, std::string("unknown key (expected ") + kScenarioKeyList + ")");
    ConfigReader r(object, source, at + ".");
    Scenario s;
    auto required_string = [&](const char* key) {
        auto v = r.get_string(key);
        if (!v) r.fail(key, "required field is missing (a string)");
        if (v->empty()) r.fail(key, "expected a non-empty string");
        return *v;
    };
    s.name = required_string("name");
    ScenarioInputs& in = s.inputs;
    in.model = required_string("model");
    in.gpu = required_string("gpu");
    if (auto e = r.get_string("engine")) {
        in.engine = *e;
        try {
            parse_engine(in.engine);
        } catch (const Error&) {
            r.fail("engine", "expected generic, vllm, vllm-v0, sglang or trtllm, found \"" + in.engine + "\"");
        }
    }
    in.tp = r.get_int({"tp"}, 1, 4096).value_or(1);
    in.pp = r.get_int({"pp"}, 1, 4096).value_or(1);
    in.dp = r.get_int({"dp"}, 1, 4096).value_or(0);
    in.ep = r.get_int({"ep"}, 1, 4096).value_or(0);
    in.enable_expert_parallel = r.get_bool("enable_expert_parallel").value_or(false);
    in.redundant_experts = r.get_int({"redundant_experts"}, 0, 1'000'000).value_or(0);
    in.moe_dense_tp_size = r.get_int({"moe_dense_tp_size"}, 1, 4096).value_or(0);
    if (auto b = r.get_string("moe_a2a_backend")) {
        if (*b != "none" && *b != "deepep") r.fail("moe_a2a_backend", "expected none or deepep, found \"" + *b + "\"");
        if (in.engine != "sglang") r.fail("moe_a2a_backend", "applies to engine sglang only");
        in.moe_a2a_backend = *b;
    }
    if (in.moe_dense_tp_size != 0 && in.engine != "sglang") r.fail("moe_dense_tp_size", "applies to engine sglang only");
    in.nodes = r.get_int({"nodes"}, 1, 4096).value_or(0);
    in.gpus_per_node = r.get_int({"gpus_per_node"}, 1, 4096).value_or(0);
    if (auto n = r.get_string("nic")) {
        if (n->empty()) r.fail("nic", "expected a NIC id such as ib-ndr (kvplan roofline --help lists them), found \"\"");
        in.nic = *n;
    }
    in.two_batch_overlap = r.get_bool("two_batch_overlap").value_or(false);
    in.context_tokens = r.require_int({"context_tokens"}, 1, kMaxTokens);
    auto dtype_field = [&](const char* key, std::string& field) {
        if (auto d = r.get_string(key)) {
            field = *d;
            if (field != "auto" && !parse_dtype(field)) r.fail(key, "expected auto, fp32, fp16, bf16, fp8, int8 or int4, found \"" + field + "\"");
        }
    };
    dtype_field("kv_dtype", in.kv_dtype);
    dtype_field("weights_dtype", in.weights_dtype);
    in.max_model_len = r.get_int({"max_model_len"}, 1, kMaxTokens);
    in.max_num_seqs = r.get_int({"max_num_seqs"}, 1, 1'000'000);
    in.max_num_batched_tokens = r.get_int({"max_num_batched_tokens"}, 1, kMaxTokens);
    in.block_size = r.get_int({"block_size"}, 1, 1'000'000);
    if (auto m = r.get_number("mem_util")) {
        if (!(*m > 0 && *m <= 1)) r.fail("mem_util", "expected a fraction in (0, 1], found " + nlohmann::json(*m).dump());
        in.mem_util = *m;
    }
    in.batch = r.get_int({"batch"}, 1, 1'000'000);
    if (auto c = r.get_string("calibration")) {
        if (!in.batch) r.fail("calibration", "calibrates the decode figures, which need the scenario's \"batch\"");
        in.calibration = *c;
    }
    if (in.batch && in.pp > 1) r.fail("batch", "decode figures model tensor parallelism only; drop \"batch\" or use pp 1");
    // nodes, gpus_per_node and nic place a DP/EP layout's GPUs, for its decode figures.
    if (in.nodes > 0 || in.gpus_per_node > 0 || !in.nic.empty()) {
        const std::optional<ScaleOutInputs> si = scale_out_from_flags(scenario_layout(in), scale_out_rules(in.engine));
        const char* key = in.nodes > 0 ? "nodes" : in.gpus_per_node > 0 ? "gpus_per_node" : "nic";
        if (!si) r.fail(key, "places a DP attention + EP layout's GPUs: add dp or ep");
        else if (!in.batch) r.fail(key, "places the GPUs for the decode figures, which need the scenario's \"batch\"");
        else {
            const std::int64_t gpus = in.engine == "sglang" ? si->tp : si->tp * si->dp;
            if (in.nodes > 0 && in.gpus_per_node > 0 && in.nodes * in.gpus_per_node != gpus)
                r.fail("nodes", std::to_string(in.nodes) + " nodes x gpus_per_node " + std::to_string(in.gpus_per_node) + " is not the layout's " +
                                    std::to_string(gpus) + " GPUs");
            else if (in.nodes > 0 && gpus % in.nodes != 0)
                r.fail("nodes", "the layout's " + std::to_string(gpus) + " GPUs do not split evenly over " + std::to_string(in.nodes) + " nodes");
        }
    }

    // two_batch_overlap splits the layout's decode step: an EP layout with a batch, on vLLM or SGLang.
    if (in.two_batch_overlap) {
        const std::optional<ScaleOutInputs> si = scale_out_from_flags(scenario_layout(in), scale_out_rules(in.engine));
        if (in.engine != "vllm" && in.engine != "sglang") r.fail("two_batch_overlap", "applies to engine vllm (--enable-dbo) or sglang only");
        else if (!si || (si->ep < 2 && !si->enable_expert_parallel && !(in.engine == "sglang" && in.moe_a2a_backend == "deepep")))
            r.fail("two_batch_overlap", "hides the expert all-to-all: add ep, or enable_expert_parallel with dp");
        else if (!in.batch) r.fail("two_batch_overlap", "overlaps the decode step, which needs the scenario's \"batch\"");
    }

    const bool has_expected = object.contains("expected");
    if (has_expected && !object.at("expected").is_object())
        r.fail("expected", "expected an object of figures, found " + json_type_name(object.at("expected")));
    if (!has_expected && require_expected) r.fail("expected", "required field is missing (run `kvplan check --update` to fill it)");
    if (has_expected) {
        const nlohmann::json& expected = object.at("expected");
        for (const auto& [key, value] : expected.items()) {
            const FigureSpec* spec = nullptr;
            for (const FigureSpec& f : kFigures)
                if (key == f.key) spec = &f;
            const std::string field = at + ".expected." + key;
            if (!spec)
                fail(source, field,
                     "unknown figure (expected kv_bytes_per_token, kv_bytes_per_sequence, kv_cache_tokens, max_requests, decode_step_s or "
                     "decode_tokens_per_s)");
            if (!scenario_wants(in, spec->figure)) {
                if (require_expected) fail(source, field, "a decode figure needs the scenario's \"batch\"");
                continue;  // --update drops it
            }
            s.expected[static_cast<std::size_t>(spec->figure)] = read_figure(value, *spec, source, field);
        }
    }
    if (require_expected)
        for (const FigureSpec& f : kFigures)
            if (scenario_wants(in, f.figure) && s.expected[static_cast<std::size_t>(f.figure)].state == FigureValue::State::Absent)
                fail(source, at + ".expected." + f.key,
                     std::string("required figure is missing (") + (f.integer ? "an integer" : "a number") +
                         "; run `kvplan check --update` to fill it)");
    return s;
}

ModelProvenance read_model_provenance(const nlohmann::json& object, const std::string& source, const std::string& at) {
    if (!object.is_object()) fail(source, at, "expected an object (source, repo_id, revision, ref, config_sha256), found " + json_type_name(object));
    for (const auto& [key, value] : object.items())
        if (!kModelKeys.count(key)) fail(source, at + "." + key, "unknown key (expected source, repo_id, revision, ref, config_sha256)");
    ConfigReader r(object, source, at + ".");
    ModelProvenance p;
    const auto kind = r.get_string("source");
    if (!kind) r.fail("source", "required field is missing (preset, hf_cache, file, folder or gguf)");
    const auto parsed = parse_model_source(*kind);
    if (!parsed || *parsed == ModelSourceKind::Manual) r.fail("source", "expected preset, hf_cache, file, folder or gguf, found \"" + *kind + "\"");
    p.kind = *parsed;
    p.repo_id = r.get_string("repo_id").value_or("");
    p.revision = r.get_string("revision").value_or("");
    p.ref = r.get_string("ref").value_or("");
    p.config_sha256 = r.get_string("config_sha256").value_or("");
    if (!p.config_sha256.empty() && (p.config_sha256.size() != 64 || p.config_sha256.find_first_not_of("0123456789abcdef") != std::string::npos))
        r.fail("config_sha256", "expected 64 lowercase hex digits, found \"" + p.config_sha256 + "\"");
    return p;
}

nlohmann::ordered_json provenance_json(const ModelProvenance& p) {
    nlohmann::ordered_json j;
    j["source"] = model_source_name(p.kind);
    if (!p.repo_id.empty()) j["repo_id"] = p.repo_id;
    if (!p.revision.empty()) j["revision"] = p.revision;
    if (!p.ref.empty()) j["ref"] = p.ref;
    if (!p.config_sha256.empty()) j["config_sha256"] = p.config_sha256;
    return j;
}

}  // namespace

ModelProvenance provenance_of(const ModelSource& s) {
    return {s.kind, s.repo_id, s.revision, s.ref, s.config_sha256};
}

nlohmann::ordered_json figure_value_json(const FigureValue& v) {
    switch (v.state) {
        case FigureValue::State::Integer: return v.integer;
        case FigureValue::State::Real: return v.real;
        default: return nullptr;
    }
}

Baseline parse_baseline(const nlohmann::json& doc, const std::string& source, bool require_expected) {
    if (!doc.is_object()) fail(source, "(top level)", "expected a JSON object, found " + json_type_name(doc));
    ConfigReader r(doc, source);
    if (!doc.contains("schema_version"))
        r.fail("schema_version", "required field is missing (this kvplan writes " + std::to_string(kBaselineSchemaVersion) + ")");
    Baseline b;
    b.schema_version = r.require_int({"schema_version"}, 0, INT64_MAX);
    if (b.schema_version < 1 || b.schema_version > kBaselineSchemaVersion)
        r.fail("schema_version", "unknown version " + std::to_string(b.schema_version) + " (this kvplan reads versions 1 to " +
                                     std::to_string(kBaselineSchemaVersion) + "; a newer kvplan wrote this file?)");
    for (const auto& [key, value] : doc.items())
        if (!kTopKeys.count(key))
            r.fail(key,
                   "unknown key (expected schema_version, tolerance_percent, tolerance_percent_by_figure, scenarios, description, kvplan_version, "
                   "kvplan_commit, models)");
    if (b.schema_version >= 2) {
        Provenance p;
        if (!doc.contains("kvplan_version")) r.fail("kvplan_version", "required field is missing (the kvplan version that wrote the figures)");
        p.kvplan.version = *r.get_string("kvplan_version");
        p.kvplan.commit = r.get_string("kvplan_commit").value_or("");
        if (!doc.contains("models")) r.fail("models", "required field is missing (how each scenario's model resolved)");
        const nlohmann::json& models = doc.at("models");
        if (!models.is_object()) r.fail("models", "expected an object keyed by the scenarios' model, found " + json_type_name(models));
        for (const auto& [key, value] : models.items()) p.models[key] = read_model_provenance(value, source, "models." + nlohmann::json(key).dump());
        b.provenance = std::move(p);
    } else {
        for (const char* key : {"kvplan_version", "kvplan_commit", "models"})
            if (doc.contains(key)) r.fail(key, "needs schema_version 2 (version 1 files record no provenance)");
    }
    if (auto t = r.get_number("tolerance_percent")) {
        if (!(*t >= 0 && *t <= 100)) r.fail("tolerance_percent", "expected a percentage in [0, 100], found " + nlohmann::json(*t).dump());
        b.tolerance_ppb = std::llround(*t * 1e7);
    }
    if (doc.contains("tolerance_percent_by_figure")) {
        const nlohmann::json& by = doc.at("tolerance_percent_by_figure");
        if (!by.is_object()) r.fail("tolerance_percent_by_figure", "expected an object of figure key to percentage, found " + json_type_name(by));
        for (const auto& [key, value] : by.items()) {
            const std::string field = "tolerance_percent_by_figure." + key;
            const FigureSpec* spec = nullptr;
            for (const FigureSpec& f : kFigures)
                if (key == f.key) spec = &f;
            if (!spec)
                r.fail(field,
                       "not a figure (expected kv_bytes_per_token, kv_bytes_per_sequence, kv_cache_tokens, max_requests, "
                       "decode_step_s or decode_tokens_per_s)");
            if (!value.is_number() || !(value.get<double>() >= 0 && value.get<double>() <= 100))
                r.fail(field, "expected a percentage in [0, 100], found " + value.dump());
            b.tolerance_by_figure[static_cast<std::size_t>(spec->figure)] = std::llround(value.get<double>() * 1e7);
        }
    }
    if (!doc.contains("scenarios")) r.fail("scenarios", "required field is missing (an array of scenarios)");
    const nlohmann::json& list = doc.at("scenarios");
    if (!list.is_array()) r.fail("scenarios", "expected an array, found " + json_type_name(list));
    if (list.empty()) r.fail("scenarios", "expected at least one scenario");
    std::set<std::string> names;
    for (std::size_t i = 0; i < list.size(); ++i) {
        Scenario s = read_scenario(list[i], source, i, require_expected);
        if (!names.insert(s.name).second) fail(source, "scenarios[" + std::to_string(i) + "].name", "duplicate name \"" + s.name + "\"");
        b.scenarios.push_back(std::move(s));
    }
    return b;
}

nlohmann::ordered_json scenario_json(const Scenario& s) {
    const ScenarioInputs& in = s.inputs;
    nlohmann::ordered_json j;
    j["name"] = s.name;
    j["model"] = in.model;
    j["gpu"] = in.gpu;
    j["engine"] = in.engine;
    j["tp"] = in.tp;
    if (in.pp != 1) j["pp"] = in.pp;
    if (in.dp != 0) j["dp"] = in.dp;
    if (in.ep != 0) j["ep"] = in.ep;
    if (in.enable_expert_parallel) j["enable_expert_parallel"] = true;
    if (in.redundant_experts != 0) j["redundant_experts"] = in.redundant_experts;
    if (in.moe_dense_tp_size != 0) j["moe_dense_tp_size"] = in.moe_dense_tp_size;
    if (!in.moe_a2a_backend.empty()) j["moe_a2a_backend"] = in.moe_a2a_backend;
    if (in.nodes != 0) j["nodes"] = in.nodes;
    if (in.gpus_per_node != 0) j["gpus_per_node"] = in.gpus_per_node;
    if (!in.nic.empty()) j["nic"] = in.nic;
    if (in.two_batch_overlap) j["two_batch_overlap"] = true;
    j["context_tokens"] = in.context_tokens;
    j["kv_dtype"] = in.kv_dtype;
    if (in.mem_util) j["mem_util"] = *in.mem_util;
    if (in.batch) j["batch"] = *in.batch;
    if (in.weights_dtype != "auto") j["weights_dtype"] = in.weights_dtype;
    if (in.max_model_len) j["max_model_len"] = *in.max_model_len;
    if (in.max_num_seqs) j["max_num_seqs"] = *in.max_num_seqs;
    if (in.max_num_batched_tokens) j["max_num_batched_tokens"] = *in.max_num_batched_tokens;
    if (in.block_size) j["block_size"] = *in.block_size;
    if (!in.calibration.empty()) j["calibration"] = in.calibration;
    j["expected"] = nlohmann::ordered_json::object();
    set_expected(j, s.expected);
    return j;
}

void set_expected(nlohmann::ordered_json& object, const Figures& figures) {
    nlohmann::ordered_json& expected = object["expected"];
    if (!expected.is_object()) expected = nlohmann::ordered_json::object();
    for (const FigureSpec& f : kFigures) {
        const FigureValue& v = figures[static_cast<std::size_t>(f.figure)];
        if (v.state == FigureValue::State::Absent) expected.erase(f.key);
        else expected[f.key] = figure_value_json(v);
    }
}

nlohmann::ordered_json baseline_json(const std::vector<Scenario>& scenarios, std::optional<std::int64_t> tolerance_ppb, const Provenance& provenance,
                                     const std::array<std::optional<std::int64_t>, kFigureCount>& tolerance_by_figure) {
    nlohmann::ordered_json doc;
    doc["schema_version"] = kBaselineSchemaVersion;
    if (tolerance_ppb) doc["tolerance_percent"] = static_cast<double>(*tolerance_ppb) / 1e7;
    for (const FigureSpec& f : kFigures)
        if (const auto& t = tolerance_by_figure[static_cast<std::size_t>(f.figure)])
            doc["tolerance_percent_by_figure"][f.key] = static_cast<double>(*t) / 1e7;
    doc["scenarios"] = nlohmann::ordered_json::array();
    for (const Scenario& s : scenarios) doc["scenarios"].push_back(scenario_json(s));
    set_provenance(doc, provenance);
    return doc;
}

void set_provenance(nlohmann::ordered_json& doc, const Provenance& provenance) {
    doc["schema_version"] = kBaselineSchemaVersion;
    doc["kvplan_version"] = provenance.kvplan.version;
    doc["kvplan_commit"] = provenance.kvplan.commit;  // "" when unknown: the scenarios start on the same line either way
    nlohmann::ordered_json models = nlohmann::ordered_json::object();
    for (const auto& [model, p] : provenance.models) models[model] = provenance_json(p);
    doc["models"] = models;
    nlohmann::ordered_json ordered;
    for (const char* key : kTopOrder)
        if (doc.contains(key)) ordered[key] = std::move(doc[key]);
    doc = std::move(ordered);
}

}  // namespace kvplan
