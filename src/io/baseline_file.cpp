#include "io/baseline_file.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/units.hpp"
#include "io/model_loader.hpp"

namespace kvplan {

namespace fs = std::filesystem;

namespace {

// The 1-based line of each scenario's "name" value, found in order.
void set_lines(const std::string& text, Baseline& b) {
    // Scenarios appear in file order, so one forward pass finds every name and
    // counts each newline once: linear in the file, whatever its size.
    std::size_t from = 0;
    std::size_t counted_to = 0;
    int line = 1;
    for (Scenario& s : b.scenarios) {
        const std::string value = nlohmann::json(s.name).dump();
        std::size_t at = from;
        while ((at = text.find("\"name\"", at)) != std::string::npos) {
            std::size_t v = text.find_first_not_of(" \t\r\n", at + 6);
            if (v != std::string::npos && text[v] == ':') v = text.find_first_not_of(" \t\r\n", v + 1);
            if (v != std::string::npos && text.compare(v, value.size(), value) == 0) break;
            at += 6;
        }
        if (at == std::string::npos) continue;
        line += static_cast<int>(
            std::count(text.begin() + static_cast<std::ptrdiff_t>(counted_to), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
        counted_to = at;
        s.line = line;
        from = at + 6;
    }
}

bool looks_like_path(const std::string& model) {
    auto ends_with = [&](const std::string& suffix) {
        return model.size() >= suffix.size() && model.compare(model.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    return ends_with(".json") || model.front() == '.' || model.front() == '/';
}

}  // namespace

BaselineFile read_baseline_file(const std::string& path, bool require_expected) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec) usage_error(path + ": cannot read the baseline: " + ec.message());
    if (static_cast<std::int64_t>(size) > kMaxBaselineBytes)
        data_error(path + ": file is " + group_digits(static_cast<std::int64_t>(size)) + " bytes; a baseline is at most " +
                   binary_size(kMaxBaselineBytes));
    std::ifstream in(path, std::ios::binary);
    if (!in) usage_error(path + ": cannot open the baseline for reading");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();
    // Read for its fields (with kvplan's line:column messages for malformed
    // JSON), and again with its key order for an update to keep.
    const nlohmann::json value = parse_json_text(text, path, JsonKeys::Unique);
    BaselineFile f;
    f.path = path;
    f.doc = nlohmann::ordered_json::parse(text);
    f.baseline = parse_baseline(value, path, require_expected);
    set_lines(text, f.baseline);
    return f;
}

std::string scenario_file_path(const std::string& file, const std::string& baseline_path) {
    const fs::path f(file);
    if (f.is_absolute()) return file;
    return (fs::path(baseline_path).parent_path() / f).lexically_normal().string();
}

std::string scenario_model_argument(const std::string& model, const std::string& baseline_path) {
    const std::string candidate = scenario_file_path(model, baseline_path);
    std::error_code ec;
    if (fs::exists(candidate, ec) || looks_like_path(model)) return candidate;
    return model;
}

std::string model_reference_for(const std::string& model, const std::string& baseline_path) {
    std::error_code ec;
    if (!fs::exists(model, ec)) return model;
    const fs::path folder = fs::absolute(fs::path(baseline_path)).parent_path();
    return fs::proximate(fs::absolute(model), folder, ec).generic_string();
}

std::string baseline_text(const nlohmann::ordered_json& doc) {
    return doc.dump(2) + "\n";
}

}  // namespace kvplan
