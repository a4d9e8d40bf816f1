// Resolves a --model argument, reads and parses the config, and returns the
// ModelSpec. With io/gguf_reader, the only place that touches model files. In order:
//   1. a path: a GGUF file (llama.cpp's; io/gguf_reader.hpp), a config.json,
//      a model folder holding one, or a Hugging Face
//      cache entry (models--org--name/snapshots/<refs/main>/config.json);
//   2. a bundled preset name (case-insensitive);
//   3. a Hugging Face repo id ("org/name") found in the local HF cache, its
//      models--org--name folder matched ignoring case (an exact spelling
//      first); the model is then named by the repo id as the cache spells it;
//   4. a Hugging Face repo id a bundled preset was copied from (ignoring case).
// ModelSpec::source records which it was, the cache revision, and the
// SHA-256 of the config bytes read (a preset's embedded text).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/model/model_spec.hpp"
#include "core/model/served_model.hpp"

namespace kvplan {

// A config.json is a few kilobytes; anything this large is a weights file or garbage.
constexpr std::int64_t kMaxConfigBytes = 8 * 1024 * 1024;

// Throws Error(Usage) when `arg` names nothing, Error(Data) when what it
// names is not a valid config. `origin` is where the argument came from, as
// messages name it: the flag, or a baseline's "model" field.
ModelSpec load_model(const std::string& arg, const std::string& origin = "--model");

// Call after load_model(arg) succeeded.
ServedModel served_model(const std::string& arg);

// What a key given twice in one object means. A model's config is read as
// Python's json module (and so transformers) reads it: the last one wins.
// kvplan's own files (devices, engines, prices, calibrations, baselines) are
// written for kvplan, so a repeated key is a mistake to name, not to guess at.
enum class JsonKeys { LastWins, Unique };

// Reads and parses a JSON file with kvplan's error messages (file name, line,
// column). Used for configs and, later, baselines and calibrations.
// With `bytes`, the file's bytes as read are stored there too (for hashing).
nlohmann::json read_json_file(const std::string& path, std::int64_t max_bytes = kMaxConfigBytes, std::string* bytes = nullptr,
                              JsonKeys keys = JsonKeys::LastWins);

// Parses JSON text; `source` names it in messages.
nlohmann::json parse_json_text(const std::string& text, const std::string& source, JsonKeys keys = JsonKeys::LastWins);

}  // namespace kvplan
