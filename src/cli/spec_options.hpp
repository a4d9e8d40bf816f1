// Speculative decoding flags, shared by `kvplan roofline` (a speculative
// step priced next to plain decode) and `kvplan simulate` (every decode
// step speculative): --spec-method, --spec-tokens, --acceptance and
// --draft-model (docs/roofline.md and docs/simulate.md, "Speculative decoding").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/model/model_spec.hpp"
#include "core/speed/roofline.hpp"

namespace kvplan {

struct SpecFlags {
    std::string method;       // mtp|eagle|draft; "": off
    std::int64_t tokens = 0;  // K
    std::string acceptance;   // one rate, or K comma-separated
    std::string draft_model;  // --spec-method draft
};

// Adds the four flags; `what` ends the --spec-method help ("priced next to plain decode").
void add_spec_options(CLI::App& cmd, SpecFlags& f, const std::string& what);

// The proposer the flags describe for `target` (the draft head for
// mtp/eagle, the --draft-model for draft, loaded into `draft_model`, which
// must outlive the result); nullopt without --spec-method. Error(Usage) for
// flags that do not go together.
// With `layout` (DP attention + EP; target.tp the attention TP) an MTP or
// EAGLE head is priced under it; a separate draft model is refused there.
std::optional<SpecInputs> resolve_spec(const SpecFlags& f, const ModelSpec& model, const CostModelInputs& target, ModelSpec& draft_model,
                                       const ExpertLayoutInputs* layout = nullptr);

}  // namespace kvplan
