#include "io/presets.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace kvplan {

// Generated from models/presets/ by cmake/embed_presets.cmake.
namespace embedded {
extern const char* const kPresetIndex;
struct File {
    const char* name;
    const char* text;
};
extern const File kPresetFiles[];
extern const std::size_t kPresetFileCount;
}  // namespace embedded

const std::vector<Preset>& presets() {
    static const std::vector<Preset> list = [] {
        std::vector<Preset> out;
        // The index is part of the build; a malformed one is a build bug, caught by tests.
        auto index = nlohmann::json::parse(embedded::kPresetIndex);
        for (const auto& entry : index.at("presets")) {
            Preset p;
            p.name = entry.at("name").get<std::string>();
            p.hf_id = entry.at("hf_id").get<std::string>();
            p.source = entry.at("source").get<std::string>();
            std::string file = entry.at("file").get<std::string>();
            for (std::size_t i = 0; i < embedded::kPresetFileCount; ++i)
                if (file == embedded::kPresetFiles[i].name) p.config_text = embedded::kPresetFiles[i].text;
            if (p.config_text.empty()) throw std::logic_error("preset index names a missing file: " + file);
            out.push_back(std::move(p));
        }
        return out;
    }();
    return list;
}

std::optional<Preset> find_preset(std::string_view name) {
    auto lower = [](std::string_view s) {
        std::string out(s);
        std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
        return out;
    };
    const std::string wanted = lower(name);
    for (const Preset& p : presets())
        if (lower(p.name) == wanted) return p;
    return std::nullopt;
}

std::string preset_names() {
    std::string out;
    for (const Preset& p : presets()) {
        if (!out.empty()) out += ", ";
        out += p.name;
    }
    return out;
}

}  // namespace kvplan
