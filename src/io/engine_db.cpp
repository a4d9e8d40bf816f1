#include "io/engine_db.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "core/error.hpp"
#include "io/embedded.hpp"
#include "io/model_loader.hpp"

namespace kvplan {

namespace embedded {
extern const NamedText kEngineProfiles[];
extern const std::size_t kEngineProfilesCount;
extern const char* const kInterconnects;
extern const char* const kCollectives;
}  // namespace embedded

const std::vector<LinkLatency>& bundled_link_latencies() {
    // A malformed table is a build bug; tests parse it on every run.
    static const std::vector<LinkLatency> table =
        parse_link_latencies(parse_json_text(embedded::kInterconnects, "models/interconnects.json"), "models/interconnects.json");
    return table;
}

const std::vector<AllToAllLatency>& bundled_all_to_all_latencies() {
    static const std::vector<AllToAllLatency> table =
        parse_all_to_all_latencies(parse_json_text(embedded::kInterconnects, "models/interconnects.json"), "models/interconnects.json");
    return table;
}

const std::shared_ptr<const CollectiveTables>& bundled_collectives() {
    static const std::shared_ptr<const CollectiveTables> tables = std::make_shared<const CollectiveTables>(
        parse_collectives(parse_json_text(embedded::kCollectives, "models/collectives.json"), "models/collectives.json"));
    return tables;
}

const std::vector<Nic>& bundled_nics() {
    static const std::vector<Nic> table =
        parse_nics(parse_json_text(embedded::kInterconnects, "models/interconnects.json"), "models/interconnects.json");
    return table;
}

const Nic& find_nic(const std::string& id) {
    std::string ids;
    for (const Nic& n : bundled_nics()) {
        if (n.id == id) return n;
        ids += (ids.empty() ? "" : ", ") + n.id;
    }
    usage_error("--nic " + id + ": expected one of " + ids);
}

const std::vector<EngineProfile>& bundled_engines() {
    static const std::vector<EngineProfile> engines = [] {
        std::vector<EngineProfile> out;
        for (std::size_t i = 0; i < embedded::kEngineProfilesCount; ++i) {
            const std::string source = std::string("models/engines/") + embedded::kEngineProfiles[i].name;
            EngineProfile p = parse_engine_profile(parse_json_text(embedded::kEngineProfiles[i].text, source), source);
            if (source != "models/engines/" + p.id + ".json") data_error(source + ": id: expected the file's name, found \"" + p.id + "\"");
            p.links = bundled_link_latencies();
            p.all_to_all = bundled_all_to_all_latencies();
            p.nics = bundled_nics();
            p.collectives = bundled_collectives();
            out.push_back(std::move(p));
        }
        // generic first: the default, then the rest by name.
        std::stable_sort(out.begin(), out.end(),
                         [](const EngineProfile& a, const EngineProfile& b) { return (a.id == "generic") > (b.id == "generic"); });
        return out;
    }();
    return engines;
}

namespace {

std::optional<std::vector<EngineProfile>>& merged() {
    static std::optional<std::vector<EngineProfile>> engines;
    return engines;
}

}  // namespace

const std::vector<EngineProfile>& known_engines() {
    return merged() ? *merged() : bundled_engines();
}

void use_engine_file(const std::string& path) {
    std::string file = path;
    if (file.empty())
        if (const char* env = std::getenv("KVPLAN_ENGINE_FILE")) file = env;
    merged().reset();
    if (file.empty()) return;
    const nlohmann::json value = read_json_file(file, kMaxConfigBytes, nullptr, JsonKeys::Unique);
    std::vector<EngineProfile> out = bundled_engines();
    const std::size_t n = value.is_array() ? value.size() : 1;
    if (value.is_array() && n == 0) data_error(file + ": expected a profile object or a non-empty array of them");
    for (std::size_t i = 0; i < n; ++i) {
        const nlohmann::json& one = value.is_array() ? value[i] : value;
        const std::string where = value.is_array() ? file + ": [" + std::to_string(i) + "]" : file;
        EngineProfile p = parse_engine_profile(one, where);
        p.links = bundled_link_latencies();
        p.all_to_all = bundled_all_to_all_latencies();
        p.collectives = bundled_collectives();
        p.nics = bundled_nics();
        auto same = std::find_if(out.begin(), out.end(), [&](const EngineProfile& b) { return b.id == p.id; });
        if (same != out.end()) *same = p;
        else out.push_back(p);
    }
    merged() = std::move(out);
}

const EngineProfile& find_engine(const std::string& flag, const std::string& id) {
    const auto& all = known_engines();
    for (const EngineProfile& p : all)
        if (p.id == id) return p;
    std::string known;
    for (const EngineProfile& p : all) known += (known.empty() ? "" : ", ") + p.id;
    usage_error(flag + " " + id + ": no such engine profile (known: " + known + "; `kvplan engines` lists them)");
}

}  // namespace kvplan
