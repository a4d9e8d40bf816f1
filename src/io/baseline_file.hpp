// Baseline files on disk: reading one (keeping its key order, so that an
// update changes only the figures), finding the model a scenario names, and
// the text an update or `kvplan baseline` writes.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/gate/baseline.hpp"

namespace kvplan {

// A baseline is a few hundred scenarios at most; anything larger is not one.
constexpr std::int64_t kMaxBaselineBytes = 64 * 1024 * 1024;

struct BaselineFile {
    std::string path;
    nlohmann::ordered_json doc;  // as read, key order kept
    Baseline baseline;           // parsed, with each scenario's line number
};

// Throws Error(Usage) when the file cannot be read, Error(Data) naming the
// file and field when its content is wrong (see parse_baseline).
BaselineFile read_baseline_file(const std::string& path, bool require_expected);

// The model argument to load for a scenario: a path relative to the baseline
// file's folder when such a file or folder exists there (or the name looks
// like a path: it ends in .json or starts with . or /), else the name as given
// (a preset or a Hugging Face id).
std::string scenario_model_argument(const std::string& model, const std::string& baseline_path);

// A file a scenario names (a calibration): relative to the baseline's folder
// unless absolute.
std::string scenario_file_path(const std::string& file, const std::string& baseline_path);

// How `kvplan baseline --output FILE` records a model or a calibration file:
// a path that exists is made relative to FILE's folder; a preset or id is
// kept as given.
std::string model_reference_for(const std::string& model, const std::string& baseline_path);

// The text written for a baseline document: two-space indent, one trailing
// newline; the same document always gives the same bytes.
std::string baseline_text(const nlohmann::ordered_json& doc);

}  // namespace kvplan
