// A baseline: the named scenarios a team gates on and the figures expected
// for each (docs/ci.md has the schema). This file parses an already-read
// JSON value and builds new ones; reading, resolving model paths and writing
// live in io/baseline_file.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/gate/figures.hpp"
#include "core/memory/parallel.hpp"
#include "core/model/model_spec.hpp"

namespace kvplan {

// 2 adds what the figures were computed from (kvplan_version, kvplan_commit,
// models); version 1 files, without it, are still read.
inline constexpr std::int64_t kBaselineSchemaVersion = 2;

// What to compute: the flags of `kvplan concurrency` (and `roofline` when a
// batch is given) that teams change.
struct ScenarioInputs {
    std::string model;               // preset, Hugging Face id, or a config path relative to the baseline file
    std::string gpu;                 // id from the hardware database (`kvplan gpus`)
    std::string engine = "generic";  // generic|vllm|vllm-v0|sglang|trtllm
    std::int64_t tp = 1;
    std::int64_t pp = 1;
    // Data-parallel attention and expert parallelism, as `concurrency --dp
    // --ep ...` takes them (docs/scale-out.md); 0 or empty: not given.
    std::int64_t dp = 0;
    std::int64_t ep = 0;
    bool enable_expert_parallel = false;
    std::int64_t redundant_experts = 0;
    std::int64_t moe_dense_tp_size = 0;
    std::string moe_a2a_backend;
    // Where a DP/EP layout's GPUs sit, as `roofline --nodes --gpus-per-node
    // --nic` takes them (0 or empty: one node of the device's default size, ib-ndr).
    std::int64_t nodes = 0;
    std::int64_t gpus_per_node = 0;
    std::string nic;
    // The layout's decode step as two micro-batches (roofline --two-batch-overlap).
    bool two_batch_overlap = false;
    std::int64_t context_tokens = 0;
    std::string kv_dtype = "auto";
    std::optional<double> mem_util;     // default: the engine's
    std::optional<std::int64_t> batch;  // sequences decoded together: adds the decode figures
    // Engine settings teams change (default: the engine's), as `kvplan concurrency` takes them.
    std::string weights_dtype = "auto";  // serve unquantized weights in this dtype
    std::optional<std::int64_t> max_model_len;
    std::optional<std::int64_t> max_num_seqs;
    std::optional<std::int64_t> max_num_batched_tokens;
    std::optional<std::int64_t> block_size;
    // A `kvplan measure --output` file, relative to the baseline: the decode
    // figures use its measured bandwidth and FLOP/s instead of datasheet fractions.
    std::string calibration;
};

// A scenario's dp/ep keys as the layout flags `concurrency` takes.
inline ScaleOutFlags scenario_layout(const ScenarioInputs& in) {
    return ScaleOutFlags{in.tp, in.dp, in.ep, in.enable_expert_parallel, in.redundant_experts, in.moe_dense_tp_size, in.moe_a2a_backend,
                         ""};  // a scenario has no all2all_backend key: vLLM's default dispatch
}

struct Scenario {
    std::string name;  // unique within the baseline
    ScenarioInputs inputs;
    Figures expected;  // Absent where the file has no value
    int line = 0;      // 1-based line of the scenario's "name" in the file (0: unknown), for annotations
};

// Which kvplan computed a baseline's figures: `cli/version.hpp`'s version()
// and build_commit(), passed in as text.
struct KvplanBuild {
    std::string version;  // e.g. "0.1.0"
    std::string commit;   // e.g. "ef2f876a1b2c" or "ef2f876a1b2c-dirty"; "" when unknown

    bool operator==(const KvplanBuild&) const = default;
};

// How a scenario's model resolved when the figures were computed
// (ModelSource without the path, which is the host's): the "models" entry of
// a baseline, keyed by the scenario's "model" text.
struct ModelProvenance {
    ModelSourceKind kind = ModelSourceKind::Preset;
    std::string repo_id;        // "" when none
    std::string revision;       // HF cache snapshot (commit hash); "" when none
    std::string ref;            // "main" when refs/main named the snapshot
    std::string config_sha256;  // "" when the config was not hashed (GGUF)

    bool operator==(const ModelProvenance&) const = default;
};

ModelProvenance provenance_of(const ModelSource& source);

struct Provenance {
    KvplanBuild kvplan;
    std::map<std::string, ModelProvenance> models;  // by the scenarios' "model" text
};

struct Baseline {
    std::int64_t schema_version = kBaselineSchemaVersion;
    std::optional<std::int64_t> tolerance_ppb;                                    // the file's default tolerance
    std::array<std::optional<std::int64_t>, kFigureCount> tolerance_by_figure{};  // "tolerance_percent_by_figure"
    std::vector<Scenario> scenarios;
    // nullopt: not recorded (a version 1 file, or one written by hand without it).
    std::optional<Provenance> provenance;
};

// Throws Error(Data) naming `source` and the field: not an object, unknown or
// missing schema_version, a missing or mistyped field, an unknown key (a typo
// would otherwise be ignored), a duplicate name, decode figures without a
// batch. With `require_expected`, every figure the scenario calls for must be
// present (`check`); without it they may be missing, and decode figures of a
// scenario without a batch are ignored (`check --update` fills and drops them).
Baseline parse_baseline(const nlohmann::json& doc, const std::string& source, bool require_expected);

// The JSON of one scenario as `kvplan baseline` writes it, keys in a fixed order.
nlohmann::ordered_json scenario_json(const Scenario& scenario);

// Sets `expected` of the scenario object in place: existing keys keep their
// place, new ones are appended in kFigures order, and figures the scenario no
// longer calls for are removed. Everything else in the object is untouched.
void set_expected(nlohmann::ordered_json& scenario_object, const Figures& figures);

// A whole baseline document from scenarios: schema_version, the kvplan
// version and commit, the tolerance, the scenarios, then the models' provenance.
nlohmann::ordered_json baseline_json(const std::vector<Scenario>& scenarios, std::optional<std::int64_t> tolerance_ppb, const Provenance& provenance,
                                     const std::array<std::optional<std::int64_t>, kFigureCount>& tolerance_by_figure = {});

// Sets a read document's schema_version to this kvplan's and its provenance
// to `provenance` (what `check --update` recomputed), putting the top-level
// keys in baseline_json's order; the scenarios are untouched.
void set_provenance(nlohmann::ordered_json& doc, const Provenance& provenance);

// A figure's value as JSON: its integer or real, or null (also for absent).
nlohmann::ordered_json figure_value_json(const FigureValue& value);

// The figures a scenario calls for: the four capacity figures, and the two
// decode figures when it has a batch.
bool scenario_wants(const ScenarioInputs& inputs, Figure figure);

}  // namespace kvplan
