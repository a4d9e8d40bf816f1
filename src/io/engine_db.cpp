#include "io/engine_db.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "io/model_loader.hpp"

namespace kvplan {

namespace embedded {
struct NamedText { const char* name; const char* text; };
extern const NamedText kEngineProfiles[];
extern const std::size_t kEngineProfilesCount;
extern const char* const kInterconnects;
}

const std::vector<LinkLatency>& bundled_link_latencies() {
    // A malformed table is a build bug; tests parse it on every run.
    static const std::vector<LinkLatency> table =
        parse_link_latencies(parse_json_text(embedded::kInterconnects, "models/interconnects.json"), "models/interconnects.json");
    return table;
}

const std::vector<EngineProfile>& bundled_engines() {
    static const std::vector<EngineProfile> engines = [] {
        std::vector<EngineProfile> out;
        for (std::size_t i = 0; i < embedded::kEngineProfilesCount; ++i) {
            const std::string source = std::string("models/engines/") + embedded::kEngineProfiles[i].name;
            EngineProfile p = parse_engine_profile(parse_json_text(embedded::kEngineProfiles[i].text, source), source);
            if (source != "models/engines/" + p.id + ".json") data_error(source + ": id: expected the file's name, found \"" + p.id + "\"");
            p.links = bundled_link_latencies();
            out.push_back(std::move(p));
        }
        // generic first: the default, then the rest by name.
        std::stable_sort(out.begin(), out.end(), [](const EngineProfile& a, const EngineProfile& b) { return (a.id == "generic") > (b.id == "generic"); });
        return out;
    }();
    return engines;
}

const EngineProfile& find_engine(const std::string& flag, const std::string& id) {
    const auto& all = bundled_engines();
    for (const EngineProfile& p : all)
        if (p.id == id) return p;
    std::string known;
    for (const EngineProfile& p : all) known += (known.empty() ? "" : ", ") + p.id;
    usage_error(flag + " " + id + ": no such engine profile (known: " + known + "; `kvplan engines` lists them)");
}

}  // namespace kvplan
