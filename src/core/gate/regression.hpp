// Comparing recomputed figures with a baseline's: the relative change of
// each figure, and whether it is a regression (capacity down or bytes and
// time up beyond the tolerance), an improvement, or unchanged.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/gate/baseline.hpp"
#include "core/gate/figures.hpp"

namespace kvplan {

// Tolerances are kept in parts per billion, parsed from decimal text without
// floating point, so that "0.5%" is exactly 1 in 200 at the boundary.
inline constexpr std::int64_t kPpbPerUnit = 1'000'000'000;

// "0.5%" -> 5,000,000; "0" -> 0. Throws Error(Usage) naming `flag` for a
// negative, non-numeric, over 100% or finer-than-1-ppb value, and for a bare
// non-zero number: "0.5" could mean 0.5% or 50%, and a gate that silently
// reads the looser one passes regressions.
std::int64_t parse_tolerance(const std::string& flag, const std::string& text);

// 5,000,000 -> "0.5%"
std::string tolerance_text(std::int64_t ppb);

// "0.5%", "decode_step_s=2%", "0.5%,decode_step_s=2%,decode_tokens_per_s=2%":
// a default and figures by their key, each as parse_tolerance reads it.
// Items not given keep `base`'s value (a baseline file's, for check).
Tolerances parse_tolerances(const std::string& flag, const std::string& text, Tolerances base = {});

// "0.5%", or "0.5% (decode_step_s 5%, decode_tokens_per_s 5%)" when figures differ.
std::string tolerances_text(const Tolerances& t);

enum class Verdict {
    Unchanged,    // identical
    Within,       // changed by no more than the tolerance
    Improvement,  // better beyond the tolerance
    Regression,   // worse beyond the tolerance
};

const char* verdict_name(Verdict v);  // "unchanged", "within tolerance", "improvement", "regression"

struct FigureCheck {
    Figure figure = Figure::KvBytesPerToken;
    FigureValue baseline;
    FigureValue current;
    std::optional<double> relative_change;  // (current - baseline) / baseline; nullopt from 0 or null
    Verdict verdict = Verdict::Unchanged;
    std::int64_t tolerance_ppb = 0;  // the tolerance this figure was judged with
};

// Compares one figure. A change to or from null (the figure stopped or
// started applying) and any change from 0 count as beyond every tolerance.
FigureCheck compare_figure(Figure figure, const FigureValue& baseline, const FigureValue& current, std::int64_t tolerance_ppb);

// Every figure a scenario calls for (the decode figures only with a batch),
// compared in kFigures order: what `check` reports for one scenario.
std::vector<FigureCheck> compare_scenario(const ScenarioInputs& inputs, const Figures& expected, const Figures& current,
                                          const Tolerances& tolerances);

struct ScenarioCheck {
    std::string name;
    int line = 0;                      // in the baseline file, for annotations
    std::vector<FigureCheck> figures;  // the figures the baseline has, in kFigures order
    std::optional<std::string> error;  // the scenario could not be computed
    ErrorKind error_kind = ErrorKind::Data;
};

struct CheckSummary {
    std::int64_t scenarios = 0, figures = 0;
    std::int64_t unchanged = 0, within = 0, improvements = 0, regressions = 0, errors = 0;
};

CheckSummary summarize(const std::vector<ScenarioCheck>& checks);

// What changed between the baseline's provenance and this run's: notes for
// the report, never a failure (the figures decide a regression).
struct ModelChange {
    std::string model;                        // the scenarios' "model" text
    std::optional<ModelProvenance> baseline;  // nullopt: the baseline has no entry for it
    ModelProvenance current;
    bool resolution_changed = false;  // preset vs HF cache vs file vs folder vs GGUF
    bool revision_changed = false;    // another HF cache snapshot (or repo id) than the baseline's
    bool config_changed = false;      // both config hashes known and different
};

struct ProvenanceCheck {
    bool recorded = false;        // false: the baseline records no provenance (schema version 1)
    KvplanBuild baseline_kvplan;  // when recorded
    KvplanBuild current_kvplan;
    bool kvplan_changed = false;      // versions differ, or commits where both are known
    std::vector<ModelChange> models;  // only the models that differ, by model text
};

// `current` holds the models this run loaded (a model that failed is an
// error of its scenarios, not a provenance note).
ProvenanceCheck compare_provenance(const std::optional<Provenance>& baseline, const Provenance& current);

// 0 passed; 1 a regression (or, with `strict`, an improvement: the baseline
// is stale); 65 or 2 when a scenario could not be computed (65 if any error
// is a data error), which outranks a regression.
int check_exit_code(const CheckSummary& summary, const std::vector<ScenarioCheck>& checks, bool strict);

}  // namespace kvplan
