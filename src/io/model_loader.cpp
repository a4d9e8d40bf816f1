#include "io/model_loader.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/model/config_parser.hpp"
#include "core/model/weights.hpp"
#include "core/units.hpp"
#include "io/gguf_reader.hpp"
#include "io/presets.hpp"
#include "io/safetensors_reader.hpp"
#include "io/sha256.hpp"

namespace kvplan {

namespace fs = std::filesystem;

nlohmann::json parse_json_text(const std::string& text, const std::string& source, JsonKeys keys) {
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) data_error(source + ": file is empty (expected a JSON object)");
    // Real configs nest a few levels; a limit keeps hostile files from
    // exhausting the stack when the parsed value is later copied.
    constexpr int kMaxDepth = 64;
    std::vector<std::set<std::string>> seen;  // JsonKeys::Unique: the keys of each object still open
    auto depth_guard = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        if (depth > kMaxDepth) data_error(source + ": JSON nested deeper than " + std::to_string(kMaxDepth) + " levels (not a model config)");
        if (keys == JsonKeys::LastWins) return true;
        using Event = nlohmann::json::parse_event_t;
        if (event == Event::object_start) seen.emplace_back();
        else if (event == Event::object_end && !seen.empty()) seen.pop_back();
        else if (event == Event::key && !seen.empty() && !seen.back().insert(parsed.get<std::string>()).second) {
            const std::string key = parsed.get<std::string>();
            data_error(source + ": " + (key.size() <= 40 ? key : key.substr(0, 37) + "...") +
                       ": a key given twice in one object (JSON would keep the last silently; keep one)");
        }
        return true;
    };
    try {
        return nlohmann::json::parse(text, depth_guard);
    } catch (const nlohmann::json::parse_error& e) {
        // Turn nlohmann's byte offset into line:column, and keep only its reason.
        std::size_t byte = e.byte == 0 ? 0 : e.byte - 1;
        std::size_t line = 1, column = 1;
        for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
            if (text[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
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

nlohmann::json read_json_file(const std::string& path, std::int64_t max_bytes, std::string* bytes, JsonKeys keys) {
    std::error_code ec;
    auto size = fs::file_size(path, ec);
    if (ec) usage_error(path + ": cannot read: " + ec.message());
    if (static_cast<std::int64_t>(size) > max_bytes)
        data_error(path + ": file is " + group_digits(static_cast<std::int64_t>(size)) + " bytes; a config is at most " + binary_size(max_bytes) +
                   " (is this a weights file?)");
    std::ifstream in(path, std::ios::binary);
    if (!in) usage_error(path + ": cannot open for reading");
    std::ostringstream text;
    text << in.rdbuf();
    if (bytes) *bytes = text.str();
    return parse_json_text(text.str(), path, keys);
}

namespace {

// A model folder's config.json. A Hugging Face cache entry
// (models--org--name/) keeps it under snapshots/<revision>/: the revision
// refs/main names, else the only snapshot there is.
std::string config_in_folder(const fs::path& dir) {
    std::error_code ec;
    if (fs::exists(dir / "config.json", ec)) return (dir / "config.json").string();
    if (fs::is_directory(dir / "snapshots", ec)) {
        std::ifstream ref(dir / "refs" / "main");
        std::string revision;
        if (ref >> revision && fs::exists(dir / "snapshots" / revision / "config.json", ec))
            return (dir / "snapshots" / revision / "config.json").string();
        std::vector<fs::path> snapshots;
        for (const auto& entry : fs::directory_iterator(dir / "snapshots", ec))
            if (fs::exists(entry.path() / "config.json", ec)) snapshots.push_back(entry.path());
        if (snapshots.size() == 1) return (snapshots.front() / "config.json").string();
        if (snapshots.size() > 1)
            usage_error(dir.string() + ": " + std::to_string(snapshots.size()) + " snapshots and no refs/main; pass the snapshot folder you mean");
    }
    usage_error(dir.string() + ": folder has no config.json (expected a Hugging Face model folder)");
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

// Where huggingface_hub caches models: $HF_HUB_CACHE, $HF_HOME/hub, or
// ~/.cache/huggingface/hub (huggingface_hub constants.py). The entry's
// folder is models--org--name, spelled as the repo id was when it was
// downloaded; the Hub treats ids case-insensitively, so a folder that
// matches only ignoring case is taken too (an exact match in any root first).
std::optional<fs::path> hf_cache_entry(const std::string& repo_id) {
    auto slash = repo_id.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == repo_id.size() || repo_id.find('/', slash + 1) != std::string::npos)
        return std::nullopt;
    std::vector<fs::path> roots;
    if (const char* hub = std::getenv("HF_HUB_CACHE")) roots.emplace_back(hub);
    if (const char* home = std::getenv("HF_HOME")) roots.push_back(fs::path(home) / "hub");
    if (const char* home = std::getenv("HOME")) roots.push_back(fs::path(home) / ".cache" / "huggingface" / "hub");
    std::string folder = "models--" + repo_id.substr(0, slash) + "--" + repo_id.substr(slash + 1);
    std::error_code ec;
    for (const fs::path& root : roots)
        if (fs::is_directory(root / folder, ec)) return root / folder;
    for (const fs::path& root : roots) {
        std::vector<fs::path> matches;
        for (const auto& entry : fs::directory_iterator(root, ec))
            if (equal_ignoring_case(entry.path().filename().string(), folder) && entry.is_directory(ec)) matches.push_back(entry.path());
        std::sort(matches.begin(), matches.end());
        if (matches.size() > 1)
            usage_error(repo_id + ": the Hugging Face cache " + root.string() + " holds " + matches.front().filename().string() + " and " +
                        matches[1].filename().string() + ", which differ only in case; pass the repo id as one of them is spelled");
        if (matches.size() == 1) return matches.front();
    }
    return std::nullopt;
}

// "meta-llama/Llama-3.1-8B-Instruct" for a cache entry folder
// models--meta-llama--Llama-3.1-8B-Instruct (huggingface_hub's
// repo_folder_name; repo ids cannot contain "--"). "" for any other folder.
std::string repo_id_of_entry(const fs::path& entry) {
    const std::string name = entry.filename().string();
    if (!name.starts_with("models--")) return "";
    const std::string rest = name.substr(8);
    const auto sep = rest.find("--");
    if (sep == std::string::npos || sep == 0 || sep + 2 == rest.size()) return "";
    return rest.substr(0, sep) + "/" + rest.substr(sep + 2);
}

// Fills repo_id, revision and ref when `config` lies in a cache entry's
// snapshot (models--org--name/snapshots/<revision>/config.json).
void cache_layout(const fs::path& config, ModelSource& source) {
    const fs::path snapshot = fs::absolute(config).lexically_normal().parent_path();
    const fs::path snapshots = snapshot.parent_path();
    if (snapshots.filename() != "snapshots") return;
    const std::string repo = repo_id_of_entry(snapshots.parent_path());
    if (repo.empty()) return;
    source.repo_id = repo;
    source.revision = snapshot.filename().string();
    std::ifstream ref(snapshots.parent_path() / "refs" / "main");
    std::string named;
    if (ref >> named && named == source.revision) source.ref = "main";
}

ModelSpec load_preset(const Preset& preset) {
    ModelSpec spec = parse_model_config(parse_json_text(std::string(preset.config_text), preset.name), preset.name);
    spec.name = preset.name;
    spec.source.kind = ModelSourceKind::Preset;
    spec.source.repo_id = std::string(preset.hf_id);
    spec.source.config_sha256 = sha256_hex(preset.config_text);
    return spec;
}

// Quantization that older tools wrote beside config.json instead of into it,
// turned into the quantization_config it stands for. vLLM reads
// hf_quant_config.json when config.json has no quantization_config
// (vllm/transformers_utils/config.py: "ModelOpt 0.29.0 and before"), and
// GPTQ's and AWQ's configs from quantize_config.json or quant_config.json
// (GPTQConfig/AWQConfig.get_config_filenames). Returns nullopt when none is there.
struct Sidecar {
    nlohmann::json quantization_config;
    std::string file;
};

std::optional<Sidecar> quantization_sidecar(const fs::path& folder) {
    std::error_code ec;
    const fs::path modelopt = folder / "hf_quant_config.json";
    if (fs::is_regular_file(modelopt, ec)) {
        const nlohmann::json doc = read_json_file(modelopt.string());
        if (!doc.is_object() || !doc.contains("quantization") || !doc["quantization"].is_object())
            data_error(modelopt.string() + ": quantization: expected an object (ModelOpt's quant_algo, kv_cache_quant_algo, group_size)");
        nlohmann::json q = doc["quantization"];
        q["quant_method"] = "modelopt";
        return Sidecar{q, modelopt.string()};
    }
    for (const char* name : {"quantize_config.json", "quant_config.json"}) {
        const fs::path file = folder / name;
        if (!fs::is_regular_file(file, ec)) continue;
        nlohmann::json q = read_json_file(file.string());
        if (!q.is_object()) data_error(file.string() + ": top level: expected a JSON object (the GPTQ or AWQ settings)");
        if (!q.contains("quant_method")) {
            // AutoAWQ writes w_bit / q_group_size / zero_point; AutoGPTQ bits / group_size / desc_act.
            const bool awq = q.contains("w_bit") || q.contains("zero_point") || q.contains("q_group_size");
            q["quant_method"] = awq ? "awq" : "gptq";
        }
        return Sidecar{q, file.string()};
    }
    return std::nullopt;
}

// "BF16 16,060,522,496 B, F32 266,240 B": the stored dtypes, largest first.
std::string dtype_list(const StoredWeights& s) {
    std::string out;
    for (const StoredDtype& d : s.by_dtype) out += (out.empty() ? "" : ", ") + d.dtype + " " + group_digits(d.bytes) + " B";
    return out;
}

// The checkpoint's stored weights from its safetensors headers, and a note
// comparing them with the config's formula.
void read_stored_weights(const fs::path& folder, ModelSpec& spec) {
    spec.stored_weights = read_safetensors_weights(folder, static_cast<std::int64_t>(spec.layers.size()), spec.warnings);
    if (!spec.stored_weights) return;
    const StoredWeights& s = *spec.stored_weights;
    const WeightSizing w = size_weights(spec);
    const double diff = w.formula_bytes > 0 ? static_cast<double>(w.bytes - w.formula_bytes) / static_cast<double>(w.formula_bytes) : 0.0;
    // Half a percent: what stored scales, biases or buffers the formula leaves out can add; more is a real disagreement.
    const std::string verdict =
        std::abs(diff) <= 0.005 ? "agrees within 0.5%"
                                : fmt::format("differs by {:+.1f}%; the stored bytes are used (--weights-from formula for the other)", 100 * diff);
    spec.notes.push_back(std::string("weights read from the header") + (s.files == 1 ? " of " : "s of ") + s.source + ": " + group_digits(s.bytes) +
                         " B in " + std::to_string(s.tensors) + " tensors (" + dtype_list(s) + "); the config's formula gives " +
                         group_digits(w.formula_bytes) + " B: " + verdict);
    if (s.skipped_bytes > 0)
        spec.notes.push_back(group_digits(s.skipped_bytes) + " B of the stored tensors belong to layers beyond num_hidden_layers (" +
                             std::to_string(spec.layers.size()) + "): next-token-prediction layers vLLM does not load; not counted");
}

// tokenizer_config.json's model_max_length, which vLLM also takes into the
// default max_model_len. Tokenizers without a limit write
// VERY_LARGE_INTEGER (1e30): no limit.
std::optional<std::int64_t> tokenizer_max_length(const fs::path& folder) {
    std::error_code ec;
    const fs::path file = folder / "tokenizer_config.json";
    if (!fs::is_regular_file(file, ec)) return std::nullopt;
    const nlohmann::json doc = read_json_file(file.string(), 64 * 1024 * 1024);
    if (!doc.is_object() || !doc.contains("model_max_length") || !doc["model_max_length"].is_number()) return std::nullopt;
    const double v = doc["model_max_length"].get<double>();
    if (!(v >= 1) || v > 1e9) return std::nullopt;
    return static_cast<std::int64_t>(v);
}

ModelSpec load_file(const std::string& path) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) usage_error(path + ": not a regular file");
    std::string bytes;
    nlohmann::json config = read_json_file(path, kMaxConfigBytes, &bytes);
    std::optional<Sidecar> sidecar;
    if (config.is_object() && !config.contains("quantization_config"))
        if ((sidecar = quantization_sidecar(fs::path(path).parent_path()))) config["quantization_config"] = sidecar->quantization_config;
    // Messages name both files when the quantization came from beside the config.
    const std::string source = sidecar ? path + " (quantization from " + fs::path(sidecar->file).filename().string() + ")" : path;
    ModelSpec spec = parse_model_config(config, source, tokenizer_max_length(fs::path(path).parent_path()));
    spec.name = path;
    spec.source.kind = ModelSourceKind::File;
    spec.source.path = path;
    spec.source.config_sha256 = sha256_hex(bytes);
    cache_layout(path, spec.source);
    if (sidecar) {
        const std::string method = quant_method_name(spec.quantization.method);
        spec.notes.push_back("quantization read from " + fs::path(sidecar->file).filename().string() + " beside config.json (" + method + ", " +
                             std::to_string(spec.quantization.bits) + "-bit weights): " +
                             (spec.quantization.method == QuantMethod::ModelOpt
                                  ? std::string("vLLM reads it when config.json has no quantization_config")
                                  : "vLLM reads it when served with --quantization " + method));
    }
    read_stored_weights(fs::path(path).parent_path(), spec);
    return spec;
}

}  // namespace

ModelSpec load_model(const std::string& arg, const std::string& origin) {
    if (arg.empty()) usage_error(origin + ": empty value (expected a config.json path, a model folder or a preset name)");
    std::error_code ec;
    // 1. A path: a GGUF file (io/gguf_reader), a config.json, or a folder holding one.
    if (fs::exists(arg, ec) && is_gguf_file(arg)) {
        ModelSpec spec = load_gguf(arg);
        spec.source.kind = ModelSourceKind::Gguf;
        spec.source.path = arg;
        return spec;
    }
    // 1. A path: a config.json, or a folder holding one.
    if (fs::exists(arg, ec)) {
        if (fs::is_directory(arg, ec)) {
            ModelSpec spec = load_file(config_in_folder(arg));
            spec.source.kind = ModelSourceKind::Folder;
            return spec;
        }
        // A checkpoint's weights file or its index stands for the folder that holds them.
        const std::string file = fs::path(arg).filename().string();
        if (file.ends_with(".safetensors") || file.ends_with(".safetensors.index.json")) {
            const fs::path folder = fs::path(arg).parent_path().empty() ? fs::path(".") : fs::path(arg).parent_path();
            return load_file(config_in_folder(folder));
        }
        return load_file(arg);
    }
    // 2. A bundled preset.
    if (auto preset = find_preset(arg)) return load_preset(*preset);
    // 3. A Hugging Face repo id in the local Hugging Face cache (ignoring case),
    // named by the repo id as the cache spells it, not the snapshot's path.
    if (auto cached = hf_cache_entry(arg)) {
        ModelSpec spec = load_file(config_in_folder(*cached));
        spec.source.kind = ModelSourceKind::HfCache;
        if (spec.source.repo_id.empty()) spec.source.repo_id = repo_id_of_entry(*cached);
        spec.name = spec.source.repo_id;
        return spec;
    }
    // 4. A Hugging Face repo id that a preset was copied from.
    for (const Preset& p : presets())
        if (equal_ignoring_case(arg, p.hf_id)) return load_preset(p);
    // An "org/name" that is not a path is a Hugging Face id that is not cached
    // yet: say how to fetch its config (the weights are not needed).
    const std::size_t slash = arg.find('/');
    if (slash != std::string::npos && slash > 0 && slash + 1 < arg.size() && arg.find('/', slash + 1) == std::string::npos && arg[0] != '.' &&
        !arg.ends_with(".json"))
        usage_error(origin + " " + arg + ": not in the local Hugging Face cache and not a bundled preset: fetch its config with `hf download " + arg +
                    " config.json` (huggingface_hub's CLI; the weights are not needed), then run again, or pass the downloaded "
                    "config.json or its folder as " +
                    origin + " PATH");
    usage_error(origin + " " + arg + ": no such file, folder, cached Hugging Face model or bundled preset (presets: " + preset_names() + ")");
}

namespace {

// The folder holding a config.json, as vLLM, SGLang and TensorRT-LLM take a local model.
ServedModel served_folder(const std::string& config) {
    fs::path folder = fs::path(config).parent_path();
    ServedModel out{folder.empty() ? "." : folder.string(), false, {}};
    if (fs::path(config).filename() != "config.json")
        out.warning = config + " is not named config.json: the engines read " + out.id + "/config.json; name the checkpoint folder in the commands";
    const nlohmann::json doc = read_json_file(config);
    if (doc.is_object() && !doc.contains("quantization_config"))
        if (auto sidecar = quantization_sidecar(fs::path(config).parent_path()))
            out.quantization_beside_config = fs::path(sidecar->file).filename() != "hf_quant_config.json";
    return out;
}

}  // namespace

ServedModel served_model(const std::string& arg) {
    std::error_code ec;
    if (fs::exists(arg, ec)) return served_folder(fs::is_directory(arg, ec) ? config_in_folder(arg) : arg);
    if (auto preset = find_preset(arg)) return ServedModel{preset->hf_id, false, {}};
    if (auto cached = hf_cache_entry(arg)) {
        ServedModel out = served_folder(config_in_folder(*cached));
        // The engines resolve a repo id through the same cache, whose folder
        // they name from the id as given: the cache's spelling finds it.
        out.id = repo_id_of_entry(*cached);
        if (out.id.empty()) out.id = arg;
        return out;
    }
    for (const Preset& p : presets())
        if (equal_ignoring_case(arg, p.hf_id)) return ServedModel{std::string(p.hf_id), false, {}};
    return ServedModel{arg, false, {}};
}

}  // namespace kvplan
