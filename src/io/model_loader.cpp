#include "io/model_loader.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/config_parser.hpp"
#include "core/error.hpp"
#include "io/presets.hpp"
#include "io/units.hpp"

namespace kvplan {

namespace fs = std::filesystem;

nlohmann::json parse_json_text(const std::string& text, const std::string& source) {
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        data_error(source + ": file is empty (expected a JSON object)");
    // Real configs nest a few levels; a limit keeps hostile files from
    // exhausting the stack when the parsed value is later copied.
    constexpr int kMaxDepth = 64;
    auto depth_guard = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        if (depth > kMaxDepth)
            data_error(source + ": JSON nested deeper than " + std::to_string(kMaxDepth) + " levels (not a model config)");
        return true;
    };
    try {
        return nlohmann::json::parse(text, depth_guard);
    } catch (const nlohmann::json::parse_error& e) {
        // Turn nlohmann's byte offset into line:column, and keep only its reason.
        std::size_t byte = e.byte == 0 ? 0 : e.byte - 1;
        std::size_t line = 1, column = 1;
        for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
            if (text[i] == '\n') { ++line; column = 1; } else { ++column; }
        }
        std::string what = e.what();
        auto colon = what.find(": ", what.find("column"));
        std::string raw = colon == std::string::npos ? what : what.substr(colon + 2);
        // The reason quotes the bytes last read; keep the one-line message printable.
        std::string reason;
        for (unsigned char c : raw) {
            if (c >= 0x20 && c < 0x7f) reason += static_cast<char>(c);
            else reason += fmt::format("\\x{:02x}", c);
        }
        data_error(source + ":" + std::to_string(line) + ":" + std::to_string(column) + ": not valid JSON: " + reason);
    } catch (const nlohmann::json::exception& e) {
        // e.g. out_of_range.406 for 1e400: a number no double holds.
        std::string what = e.what();
        auto bracket = what.find("] ");
        data_error(source + ": not valid JSON: " + (bracket == std::string::npos ? what : what.substr(bracket + 2)));
    }
}

nlohmann::json read_json_file(const std::string& path, std::int64_t max_bytes) {
    std::error_code ec;
    auto size = fs::file_size(path, ec);
    if (ec) usage_error(path + ": cannot read: " + ec.message());
    if (static_cast<std::int64_t>(size) > max_bytes)
        data_error(path + ": file is " + group_digits(static_cast<std::int64_t>(size)) + " bytes; a config is at most " +
                   binary_size(max_bytes) + " (is this a weights file?)");
    std::ifstream in(path, std::ios::binary);
    if (!in) usage_error(path + ": cannot open for reading");
    std::ostringstream text;
    text << in.rdbuf();
    return parse_json_text(text.str(), path);
}

ModelSpec load_model(const std::string& arg) {
    if (arg.empty()) usage_error("--model: empty value (expected a config.json path, a model folder or a preset name)");
    std::error_code ec;
    if (fs::exists(arg, ec)) {
        std::string path = arg;
        if (fs::is_directory(arg, ec)) {
            path = (fs::path(arg) / "config.json").string();
            if (!fs::exists(path, ec))
                usage_error(arg + ": folder has no config.json (expected a Hugging Face model folder)");
        }
        if (!fs::is_regular_file(path, ec)) usage_error(path + ": not a regular file");
        return parse_model_config(read_json_file(path), path);
    }
    if (auto preset = find_preset(arg)) {
        ModelSpec spec = parse_model_config(parse_json_text(std::string(preset->config_text), preset->name), preset->name);
        spec.name = preset->name;
        return spec;
    }
    usage_error("--model " + arg + ": no such file, folder or bundled preset (presets: " + preset_names() + ")");
}

}  // namespace kvplan
