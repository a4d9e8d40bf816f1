#include "io/gpu_db.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "core/error.hpp"
#include "io/model_loader.hpp"

namespace kvplan {

namespace embedded {
extern const char* const kGpuDatabase;
extern const char* const kGpuSchema;
}  // namespace embedded

namespace {

// The user file of the current run, merged; nullopt: none.
std::optional<std::vector<Gpu>>& merged() {
    static std::optional<std::vector<Gpu>> gpus;
    return gpus;
}

// Ids and aliases compare as find_gpu does: case, spaces and underscores aside.
std::string key(const std::string& name) {
    std::string out;
    for (char c : name) {
        if (c == ' ' || c == '_' || c == '-') continue;
        out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

}  // namespace

const std::vector<Gpu>& bundled_gpus() {
    // A malformed database is a build bug; tests parse it on every run.
    static const std::vector<Gpu> gpus = parse_gpu_database(parse_json_text(embedded::kGpuDatabase, "models/gpus.json"), "models/gpus.json");
    return gpus;
}

const char* gpu_file_schema() {
    return embedded::kGpuSchema;
}

std::vector<Gpu> merge_gpus(const std::vector<Gpu>& bundled, const std::vector<Gpu>& user, const std::string& source) {
    std::vector<Gpu> out = bundled;
    for (const Gpu& g : user) {
        std::vector<std::string> names = {g.id};
        names.insert(names.end(), g.aliases.begin(), g.aliases.end());
        for (const Gpu& b : bundled) {
            if (b.id == g.id) continue;  // replaced below
            for (const std::string& a : b.aliases)
                for (const std::string& n : names)
                    if (key(a) == key(n))
                        data_error(source + ": device \"" + g.id + "\": \"" + n + "\" is already an alias of the bundled device \"" + b.id +
                                   "\" (use that id to replace it)");
        }
        auto same = std::find_if(out.begin(), out.end(), [&](const Gpu& b) { return b.id == g.id; });
        if (same != out.end()) *same = g;
        else out.push_back(g);
    }
    return out;
}

void use_gpu_file(const std::string& path) {
    std::string file = path;
    if (file.empty())
        if (const char* env = std::getenv("KVPLAN_GPU_FILE")) file = env;
    merged().reset();
    if (file.empty()) return;
    std::vector<Gpu> user = parse_gpu_database(read_json_file(file, kMaxConfigBytes, nullptr, JsonKeys::Unique), file);
    merged() = merge_gpus(bundled_gpus(), user, file);
}

const std::vector<Gpu>& known_gpus() {
    return merged() ? *merged() : bundled_gpus();
}

std::optional<Gpu> gpu_named_by_device(const std::string& measured) {
    const std::size_t colon = measured.find(": ");  // "cuda: NVIDIA H100 80GB HBM3"
    // find_gpu reads the name as nvidia-smi prints it, vendor word and all.
    try {
        return find_gpu(known_gpus(), colon == std::string::npos ? measured : measured.substr(colon + 2), "--gpu");
    } catch (const Error&) {
        return std::nullopt;
    }
}

}  // namespace kvplan
