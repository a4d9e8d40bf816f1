// Helpers shared by the tests: load a preset, a fixture or inline JSON into a
// ModelSpec, and size it.
#pragma once

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/app.hpp"
#include "core/memory/kv_size.hpp"
#include "core/model/config_parser.hpp"
#include "core/model/weights.hpp"
#include "io/gpu_db.hpp"
#include "io/model_loader.hpp"

namespace kvplan::test {

inline ModelSpec preset(const std::string& name) {
    return load_model(name);
}

inline ModelSpec fixture(const std::string& relative) {
    return load_model(std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/" + relative);
}

inline ModelSpec from_json(const std::string& text) {
    return parse_model_config(nlohmann::json::parse(text), "inline.json");
}

inline KvSizing kv(const ModelSpec& m, std::int64_t context = 1, std::int64_t batch = 1, std::int64_t tp = 1,
                   std::optional<Dtype> dtype = std::nullopt) {
    KvOptions o;
    o.context = context;
    o.batch = batch;
    o.tp = tp;
    o.kv_dtype = dtype;
    return size_kv(m, o);
}

// One in-process run of the CLI, through the same run() that main() calls.
struct CliResult {
    int code;
    std::string out;
    std::string err;
};

inline CliResult kvplan_run(const std::vector<std::string>& args) {
    std::ostringstream out, err;
    const int code = run(args, out, err);
    return {code, out.str(), err.str()};
}

// A device from the bundled hardware database, by id or alias.
inline const Gpu& gpu(const std::string& id) {
    return find_gpu(bundled_gpus(), id);
}

// GiB to bytes, rounded to the nearest byte: how logs' two-decimal GiB figures are read.
inline std::int64_t gib(double g) {
    return static_cast<std::int64_t>(std::llround(g * 1073741824.0));
}

inline std::int64_t bytes_per_token(const std::string& preset_name) {
    return kv(preset(preset_name)).bytes_per_token;
}

}  // namespace kvplan::test
