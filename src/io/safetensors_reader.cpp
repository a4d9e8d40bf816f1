#include "io/safetensors_reader.hpp"

#include <algorithm>
#include <array>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "io/model_loader.hpp"

namespace kvplan {

namespace fs = std::filesystem;

namespace {

// Bits per element of each dtype safetensors defines (safetensors/src/tensor.rs, enum Dtype).
std::optional<int> dtype_bits(const std::string& d) {
    static const std::array<std::pair<const char*, int>, 20> kBits{{
        {"BOOL", 8},    {"U8", 8},      {"I8", 8},   {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"F4", 4},
        {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"I16", 16}, {"U16", 16},    {"F16", 16},    {"BF16", 16},   {"I32", 32},
        {"U32", 32},    {"F32", 32},    {"F64", 64}, {"I64", 64},    {"U64", 64},    {"C64", 64},
    }};
    for (const auto& [name, bits] : kBits)
        if (d == name) return bits;
    return std::nullopt;
}

bool contains(const std::string& s, const char* part) {
    return s.find(part) != std::string::npos;
}

// The decoder layer a language-model tensor belongs to ("model.layers.61.mlp..." -> 61),
// or -1. Vision and audio towers have layers of their own and are not matched.
std::int64_t decoder_layer(const std::string& name) {
    for (const char* prefix : {"model.layers.", "model.language_model.layers.", "language_model.model.layers."}) {
        if (name.rfind(prefix, 0) != 0) continue;
        std::int64_t layer = 0;
        std::size_t i = std::char_traits<char>::length(prefix);
        if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
        for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) && layer < 1'000'000; ++i) layer = layer * 10 + (name[i] - '0');
        return layer;
    }
    return -1;
}

void add_dtype(StoredWeights& out, const std::string& dtype, std::int64_t elements, std::int64_t bytes) {
    auto it = std::find_if(out.by_dtype.begin(), out.by_dtype.end(), [&](const StoredDtype& d) { return d.dtype == dtype; });
    if (it == out.by_dtype.end()) out.by_dtype.push_back(StoredDtype{dtype, elements, bytes});
    else {
        it->params = checked_add(it->params, elements, "stored elements");
        it->bytes = checked_add(it->bytes, bytes, "stored bytes");
    }
}

// One tensor entry of a header: {"dtype": "BF16", "shape": [4096, 4096], "data_offsets": [begin, end]}.
void add_tensor(const std::string& where, const std::string& name, const nlohmann::json& t, std::int64_t data_bytes, std::int64_t decoder_layers,
                StoredWeights& out) {
    const std::string at = where + ": tensor " + name;
    if (!t.is_object()) data_error(at + ": expected an object with dtype, shape and data_offsets");
    if (!t.contains("dtype") || !t["dtype"].is_string()) data_error(at + ": dtype: expected a string such as \"BF16\"");
    const std::string dtype = t["dtype"].get<std::string>();
    const std::optional<int> bits = dtype_bits(dtype);
    if (!bits) data_error(at + ": dtype \"" + dtype + "\": not a safetensors dtype (expected BF16, F16, F32, F8_E4M3, I32, U8...)");
    if (!t.contains("shape") || !t["shape"].is_array() || t["shape"].size() > 8) data_error(at + ": shape: expected a list of at most 8 dimensions");
    std::int64_t elements = 1;
    for (const nlohmann::json& d : t["shape"]) {
        if (!d.is_number_unsigned() || d.get<std::uint64_t>() > static_cast<std::uint64_t>(data_bytes) * 8)
            data_error(at + ": shape: expected whole dimensions that fit in the file");
        elements = checked_mul(elements, static_cast<std::int64_t>(d.get<std::uint64_t>()), "tensor elements");
    }
    const nlohmann::json& off = t.contains("data_offsets") ? t["data_offsets"] : nlohmann::json();
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
        data_error(at + ": data_offsets: expected [begin, end] byte offsets");
    const std::uint64_t begin = off[0].get<std::uint64_t>(), end = off[1].get<std::uint64_t>();
    if (begin > end || end > static_cast<std::uint64_t>(data_bytes))
        data_error(at + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                   "]: expected begin <= end <= " + group_digits(data_bytes) + " (the data after the header)");
    const std::int64_t bytes = static_cast<std::int64_t>(end - begin);
    // safetensors checks the same: the byte range holds exactly the shape's elements.
    if (ceil_div(checked_mul(elements, *bits, "tensor bits"), 8) != bytes)
        data_error(at + ": " + group_digits(bytes) + " bytes for " + group_digits(elements) + " " + dtype + " elements (expected " +
                   group_digits(ceil_div(elements * *bits, 8)) + ")");

    out.tensors += 1;
    out.params = checked_add(out.params, elements, "stored elements");
    out.bytes = checked_add(out.bytes, bytes, "stored bytes");
    add_dtype(out, dtype, elements, bytes);
    const std::int64_t layer = decoder_layer(name);
    if (layer >= 0 && decoder_layers > 0 && layer >= decoder_layers) {
        out.skipped_bytes += bytes;
        out.skipped_params += elements;
        return;
    }
    // The same parts the formula names (ParamPart): embedding, head, routed experts.
    if (contains(name, "lm_head.")) out.head_bytes += bytes;
    else if ((contains(name, "embed_tokens.") || contains(name, "wte.") || contains(name, "word_embeddings.")) && !contains(name, "vision") &&
             !contains(name, "visual"))
        out.embedding_bytes += bytes;
    else if (contains(name, ".experts.")) out.expert_bytes += bytes;
}

}  // namespace

SafetensorsShards find_safetensors_shards(const fs::path& folder) {
    SafetensorsShards out;
    std::error_code ec;
    const fs::path index = folder / "model.safetensors.index.json";
    if (fs::is_regular_file(index, ec)) {
        // DeepSeek-V3's index maps 91,000 tensors: a few megabytes.
        const nlohmann::json doc = read_json_file(index.string(), 64 * 1024 * 1024);
        if (!doc.is_object() || !doc.contains("weight_map") || !doc["weight_map"].is_object())
            data_error(index.string() + ": weight_map: expected an object mapping tensor names to files");
        std::set<std::string> seen;
        for (const auto& [tensor, file] : doc["weight_map"].items()) {
            if (!file.is_string() || file.get<std::string>().empty() || contains(file.get<std::string>(), "/"))
                data_error(index.string() + ": weight_map: " + tensor + ": expected a file name in this folder");
            const std::string name = file.get<std::string>();
            if (!seen.insert(name).second) continue;
            if (fs::exists(folder / name, ec)) out.files.push_back(folder / name);
            else out.missing.push_back(name);
        }
        if (doc.contains("metadata") && doc["metadata"].is_object() && doc["metadata"].contains("total_size") &&
            doc["metadata"]["total_size"].is_number_unsigned() && doc["metadata"]["total_size"].get<std::uint64_t>() < (std::uint64_t{1} << 62))
            out.index_total_bytes = static_cast<std::int64_t>(doc["metadata"]["total_size"].get<std::uint64_t>());
        return out;
    }
    for (const auto& entry : fs::directory_iterator(folder, ec))
        if (entry.path().extension() == ".safetensors") out.files.push_back(entry.path());
    std::sort(out.files.begin(), out.files.end());
    return out;
}

void add_safetensors_header(const fs::path& file, std::int64_t decoder_layers, StoredWeights& out) {
    const std::string where = file.string();
    std::error_code ec;
    const auto size = fs::file_size(file, ec);
    if (ec) usage_error(where + ": cannot read: " + ec.message());
    std::ifstream in(file, std::ios::binary);
    if (!in) usage_error(where + ": cannot open for reading");
    std::array<unsigned char, 8> prefix{};
    if (size < 8 || !in.read(reinterpret_cast<char*>(prefix.data()), 8))
        data_error(where + ": shorter than the 8-byte header length a safetensors file starts with");
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | prefix[static_cast<std::size_t>(i)];
    if (n > static_cast<std::uint64_t>(kMaxSafetensorsHeaderBytes) || n > size - 8)
        data_error(where + ": header length " + std::to_string(n) + ": expected at most " +
                   group_digits(std::min<std::int64_t>(kMaxSafetensorsHeaderBytes, static_cast<std::int64_t>(size - 8))) +
                   " bytes (the file's size and safetensors' 100 MB limit)");
    std::string text(static_cast<std::size_t>(n), '\0');
    if (!in.read(text.data(), static_cast<std::streamsize>(n))) data_error(where + ": header: file ends early");
    add_safetensors_header_text(where, text, static_cast<std::int64_t>(size - 8 - n), decoder_layers, out);
}

void add_safetensors_header_text(const std::string& where, const std::string& text, std::int64_t data_bytes, std::int64_t decoder_layers,
                                 StoredWeights& out) {
    const nlohmann::json header = parse_json_text(text, where + " (header)");
    if (!header.is_object()) data_error(where + ": header: expected a JSON object of tensors");
    for (const auto& [name, t] : header.items())
        if (name != "__metadata__") add_tensor(where, name, t, data_bytes, decoder_layers, out);
    out.files += 1;
}

std::optional<StoredWeights> read_safetensors_weights(const fs::path& folder, std::int64_t decoder_layers, std::vector<std::string>& warnings) {
    const SafetensorsShards shards = find_safetensors_shards(folder);
    if (!shards.missing.empty()) {
        warnings.push_back(std::to_string(shards.missing.size()) + " of " + std::to_string(shards.missing.size() + shards.files.size()) +
                           " safetensors files model.safetensors.index.json names are not in the folder (first: " + shards.missing.front() +
                           "); weights are the config's formula" +
                           (shards.index_total_bytes ? " (the index gives " + group_digits(*shards.index_total_bytes) + " bytes)" : ""));
        return std::nullopt;
    }
    if (shards.files.empty()) return std::nullopt;
    StoredWeights out;
    for (const fs::path& f : shards.files) add_safetensors_header(f, decoder_layers, out);
    std::sort(out.by_dtype.begin(), out.by_dtype.end(), [](const StoredDtype& a, const StoredDtype& b) { return a.bytes > b.bytes; });
    out.source = out.files == 1 ? shards.files.front().filename().string() : std::to_string(out.files) + " safetensors files";
    if (shards.index_total_bytes && *shards.index_total_bytes != out.bytes)
        warnings.push_back("model.safetensors.index.json gives total_size " + group_digits(*shards.index_total_bytes) +
                           " bytes; the files' headers give " + group_digits(out.bytes));
    return out;
}

}  // namespace kvplan
