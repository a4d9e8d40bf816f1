// The bundled model presets (models/presets/*.json), embedded in the binary
// at build time (cmake/embed_presets.cmake) so that `--model llama-3.1-8b`
// works from any folder.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvplan {

struct Preset {
    std::string name;              // e.g. "llama-3.1-8b"
    std::string hf_id;             // e.g. "meta-llama/Llama-3.1-8B-Instruct"
    std::string source;            // where the config.json was copied from
    std::string_view config_text;  // the config.json, verbatim
};

// All presets, in models/presets/index.json order.
const std::vector<Preset>& presets();

// Case-insensitive lookup by name.
std::optional<Preset> find_preset(std::string_view name);

// "llama-2-7b, llama-3.1-8b, ..." for messages.
std::string preset_names();

}  // namespace kvplan
