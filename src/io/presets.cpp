#include "io/presets.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "io/embedded.hpp"

namespace kvplan {

// Generated from models/presets/ (index.json and every config) by cmake/embed_dir.cmake.
namespace embedded {
extern const NamedText kPresetFiles[];
extern const std::size_t kPresetFilesCount;
}  // namespace embedded

const std::vector<Preset>& presets() {
    static const std::vector<Preset> list = [] {
        std::vector<Preset> out;
        // The index is part of the build; a malformed one is a build bug, caught by tests.
        auto index = nlohmann::json::parse(embedded::find_text(embedded::kPresetFiles, embedded::kPresetFilesCount, "index.json"));
        for (const auto& entry : index.at("presets")) {
            Preset p;
            p.name = entry.at("name").get<std::string>();
            p.hf_id = entry.at("hf_id").get<std::string>();
            p.source = entry.at("source").get<std::string>();
            std::string file = entry.at("file").get<std::string>();
            const char* text = embedded::find_text(embedded::kPresetFiles, embedded::kPresetFilesCount, file);
            if (!text || file == "index.json") throw std::logic_error("preset index names a missing file: " + file);
            p.config_text = text;
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
