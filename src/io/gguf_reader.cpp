#include "io/gguf_reader.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/model/config_parser.hpp"
#include "core/model/config_parts.hpp"

namespace kvplan {

namespace fs = std::filesystem;

// ggml's type_traits (ggml/src/ggml.c): blck_size and type_size = sizeof the
// block struct in ggml/src/ggml-common.h, e.g. block_q4_K = 2 fp16 scales +
// 12 bytes of 6-bit sub-scales + 128 bytes of 4-bit quants = 144 bytes per
// 256 values. Ids 4, 5 (Q4_2, Q4_3), 31-33 and 36-38 (repacked layouts) were
// removed from GGUF files and stay unknown.
const GgmlType* ggml_type_info(std::uint32_t id) {
    static const std::array<GgmlType, 42> table = {{
        {"F32", 1, 4},         // 0
        {"F16", 1, 2},         // 1
        {"Q4_0", 32, 18},      // 2: fp16 d + 16 B of nibbles
        {"Q4_1", 32, 20},      // 3: fp16 d, m + 16 B
        {nullptr, 0, 0},       // 4: Q4_2, removed
        {nullptr, 0, 0},       // 5: Q4_3, removed
        {"Q5_0", 32, 22},      // 6: fp16 d + 4 B high bits + 16 B
        {"Q5_1", 32, 24},      // 7: fp16 d, m + 4 B + 16 B
        {"Q8_0", 32, 34},      // 8: fp16 d + 32 int8
        {"Q8_1", 32, 36},      // 9: fp16 d, s + 32 int8
        {"Q2_K", 256, 84},     // 10: 16 B scales + 64 B quants + fp16 d, dmin
        {"Q3_K", 256, 110},    // 11: 32 B hmask + 64 B quants + 12 B scales + fp16 d
        {"Q4_K", 256, 144},    // 12: fp16 d, dmin + 12 B scales + 128 B quants
        {"Q5_K", 256, 176},    // 13: fp16 d, dmin + 12 B + 32 B high bits + 128 B
        {"Q6_K", 256, 210},    // 14: 128 B low + 64 B high + 16 int8 scales + fp16 d
        {"Q8_K", 256, 292},    // 15: fp32 d + 256 int8 + 16 int16 sums
        {"IQ2_XXS", 256, 66},  // 16
        {"IQ2_XS", 256, 74},   // 17
        {"IQ3_XXS", 256, 98},  // 18
        {"IQ1_S", 256, 50},    // 19
        {"IQ4_NL", 32, 18},    // 20
        {"IQ3_S", 256, 110},   // 21
        {"IQ2_S", 256, 82},    // 22
        {"IQ4_XS", 256, 136},  // 23
        {"I8", 1, 1},          // 24
        {"I16", 1, 2},         // 25
        {"I32", 1, 4},         // 26
        {"I64", 1, 8},         // 27
        {"F64", 1, 8},         // 28
        {"IQ1_M", 256, 56},    // 29
        {"BF16", 1, 2},        // 30
        {nullptr, 0, 0},       // 31: Q4_0_4_4, removed
        {nullptr, 0, 0},       // 32: Q4_0_4_8, removed
        {nullptr, 0, 0},       // 33: Q4_0_8_8, removed
        {"TQ1_0", 256, 54},    // 34
        {"TQ2_0", 256, 66},    // 35
        {nullptr, 0, 0},       // 36: IQ4_NL_4_4, removed
        {nullptr, 0, 0},       // 37: IQ4_NL_4_8, removed
        {nullptr, 0, 0},       // 38: IQ4_NL_8_8, removed
        {"MXFP4", 32, 17},     // 39: E8M0 scale + 16 B of FP4 (gpt-oss)
        {"NVFP4", 64, 36},     // 40: 4 UE4M3 scales + 32 B of FP4
        {"Q1_0", 128, 18},     // 41: fp16 d + 16 B of bits
    }};
    if (id >= table.size() || table[id].name == nullptr) return nullptr;
    return &table[id];
}

namespace {

// GGUF value types (ggml docs/gguf.md, gguf_type).
enum : std::uint32_t {
    kU8 = 0,
    kI8 = 1,
    kU16 = 2,
    kI16 = 3,
    kU32 = 4,
    kI32 = 5,
    kF32 = 6,
    kBool = 7,
    kString = 8,
    kArray = 9,
    kU64 = 10,
    kI64 = 11,
    kF64 = 12,
};

// Bytes of one fixed-size value; 0 for STRING and ARRAY.
std::uint64_t value_size(std::uint32_t type) {
    static const std::uint64_t sizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return sizes[type];
}

constexpr std::uint64_t kMaxTensors = 1u << 20;  // the largest GGUFs hold a few thousand
constexpr std::uint64_t kMaxKeys = 1u << 16;     // real files hold a few dozen
constexpr std::uint64_t kMaxKeyBytes = 65'536;   // keys are dotted names of a few dozen bytes
constexpr std::uint64_t kMaxTensorName = 63;     // GGML_MAX_NAME 64, with its NUL (gguf.cpp)
constexpr std::uint64_t kMaxDims = 4;            // GGML_MAX_DIMS

// A name from the file, safe to print on one line.
std::string printable(const std::string& raw) {
    std::string out;
    for (unsigned char c : raw.substr(0, 80)) {
        if (c >= 0x20 && c < 0x7f) out += static_cast<char>(c);
        else out += fmt::format("\\x{:02x}", c);
    }
    return raw.size() > 80 ? out + "..." : out;
}

// Bounded little-endian reads: every read and skip is checked against the
// bytes left, so no length from the file is trusted before it is compared.
class Cursor {
public:
    Cursor(std::istream& in, std::uint64_t size, const std::string& source) : in_(in), size_(size), source_(source) {}

    std::uint64_t pos() const { return pos_; }
    std::uint64_t left() const { return size_ - pos_; }
    const std::string& source() const { return source_; }

    [[noreturn]] void fail(const std::string& what) const { data_error(source_ + ": " + what); }

    void need(std::uint64_t n, const std::string& what) const {
        if (n > left())
            fail(fmt::format("truncated GGUF header: expected {} ({} bytes) at byte {}, but the file ends at byte {}", what, n, pos_, size_));
    }

    std::uint64_t uint(int width, const std::string& what) {
        unsigned char b[8] = {};
        read(reinterpret_cast<char*>(b), static_cast<std::uint64_t>(width), what);
        std::uint64_t v = 0;
        for (int i = width - 1; i >= 0; --i) v = (v << 8) | b[i];
        return v;
    }
    std::uint32_t u32(const std::string& what) { return static_cast<std::uint32_t>(uint(4, what)); }
    std::uint64_t u64(const std::string& what) { return uint(8, what); }

    // A gguf_str: uint64 length + bytes. Longer than `max_kept`: skipped, nullopt.
    std::optional<std::string> string(const std::string& what, std::uint64_t max_kept) {
        const std::uint64_t n = u64(what + "'s length");
        need(n, what);
        if (n > max_kept) {
            skip(n, what);
            return std::nullopt;
        }
        std::string s(static_cast<std::size_t>(n), '\0');
        read(s.data(), n, what);
        return s;
    }

    void skip(std::uint64_t n, const std::string& what) {
        need(n, what);
        in_.seekg(static_cast<std::streamoff>(n), std::ios::cur);
        if (!in_) fail(fmt::format("cannot read {} at byte {}", what, pos_));
        pos_ += n;
    }

private:
    void read(char* out, std::uint64_t n, const std::string& what) {
        need(n, what);
        in_.read(out, static_cast<std::streamsize>(n));
        if (static_cast<std::uint64_t>(in_.gcount()) != n) fail(fmt::format("cannot read {} at byte {}", what, pos_));
        pos_ += n;
    }

    std::istream& in_;
    std::uint64_t size_;
    std::uint64_t pos_ = 0;
    std::string source_;
};

// One fixed-size scalar of `type` into `v`.
void read_scalar(Cursor& c, std::uint32_t type, const std::string& what, GgufValue& v) {
    const std::uint64_t raw = c.uint(static_cast<int>(value_size(type)), what);
    switch (type) {
        case kU8:
        case kU16:
        case kU32: v.integer = static_cast<std::int64_t>(raw); break;
        case kI8: v.integer = static_cast<std::int8_t>(raw); break;
        case kI16: v.integer = static_cast<std::int16_t>(raw); break;
        case kI32: v.integer = static_cast<std::int32_t>(raw); break;
        case kI64: v.integer = static_cast<std::int64_t>(raw); break;
        case kU64:
            if (raw <= static_cast<std::uint64_t>(INT64_MAX)) v.integer = static_cast<std::int64_t>(raw);
            v.number = static_cast<double>(raw);
            return;
        case kBool:
            if (raw > 1) c.fail(fmt::format("{}: expected a bool (0 or 1), found {}", what, raw));
            v.integer = static_cast<std::int64_t>(raw);
            break;
        case kF32: {
            const auto bits = static_cast<std::uint32_t>(raw);
            float f = 0;
            std::memcpy(&f, &bits, sizeof f);
            v.number = f;
            return;
        }
        case kF64: {
            double d = 0;
            std::memcpy(&d, &raw, sizeof d);
            v.number = d;
            return;
        }
        default: break;
    }
    if (v.integer) v.number = static_cast<double>(*v.integer);
}

bool is_integer_type(std::uint32_t t) {
    return t <= kI32 || t == kU64 || t == kI64;
}

void check_type(const Cursor& c, std::uint32_t type, const std::string& what) {
    if (type > kF64) c.fail(fmt::format("{}: unknown GGUF value type {} (expected 0 to 12, UINT8 to FLOAT64)", what, type));
}

// An array: element type, count, elements. Integer arrays short enough are
// kept (per-layer head counts); the rest (tokenizer tokens and merges) are
// skipped, each string's length checked on the way.
void read_array(Cursor& c, const std::string& what, GgufValue& v) {
    v.element_type = c.u32(what + "'s element type");
    check_type(c, v.element_type, what + "'s elements");
    if (v.element_type == kArray) c.fail(what + ": an array of arrays (gguf.cpp refuses nested arrays too)");
    v.count = c.u64(what + "'s element count");
    const std::uint64_t each = v.element_type == kString ? 8 : value_size(v.element_type);  // a string is at least its length
    if (v.count > c.left() / each)
        c.fail(fmt::format("{}: an array of {} elements of at least {} bytes, longer than the {} bytes left in the file", what, v.count, each,
                           c.left()));
    if (v.element_type == kString) {
        for (std::uint64_t i = 0; i < v.count; ++i) c.string(what + " element " + std::to_string(i), 0);
    } else if (is_integer_type(v.element_type) && v.count <= kGgufKeptInts) {
        v.ints.reserve(static_cast<std::size_t>(v.count));
        for (std::uint64_t i = 0; i < v.count; ++i) {
            GgufValue e;
            read_scalar(c, v.element_type, what + " element " + std::to_string(i), e);
            v.ints.push_back(e.integer.value_or(INT64_MAX));
        }
    } else {
        c.skip(v.count * each, what + "'s elements");
    }
}

GgufValue read_value(Cursor& c, std::uint32_t type, const std::string& what) {
    check_type(c, type, what);
    GgufValue v;
    v.type = type;
    if (type == kString) v.text = c.string(what, kGgufKeptString);
    else if (type == kArray) read_array(c, what, v);
    else read_scalar(c, type, what, v);
    return v;
}

void read_metadata(Cursor& c, std::uint64_t count, GgufHeader& h) {
    if (count > kMaxKeys || count > c.left() / 13)  // a key is at least 8 + 4 + 1 bytes
        c.fail(fmt::format("metadata_kv_count: expected at most {} key-value pairs (and no more than the file holds), found {}",
                           std::min<std::uint64_t>(kMaxKeys, c.left() / 13), count));
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::string where = "metadata key " + std::to_string(i);
        const std::uint64_t at = c.pos();
        std::optional<std::string> key = c.string(where, kMaxKeyBytes);
        if (!key) c.fail(fmt::format("{} at byte {}: a key longer than {} bytes", where, at, kMaxKeyBytes));
        const std::string what = "metadata \"" + printable(*key) + "\"";
        const std::uint32_t type = c.u32(what + "'s value type");
        GgufValue v = read_value(c, type, what);
        if (!h.metadata.emplace(*key, std::move(v)).second) c.fail("duplicate metadata key \"" + printable(*key) + "\"");
    }
    if (auto it = h.metadata.find("general.alignment"); it != h.metadata.end()) {
        const std::optional<std::int64_t> a = it->second.integer;
        if (!a || *a <= 0 || *a > (1 << 30) || (*a & (*a - 1)) != 0) c.fail("general.alignment: expected a power of two up to 2^30 (default 32)");
        h.alignment = static_cast<std::uint64_t>(*a);
    }
}

GgufTensor read_tensor_info(Cursor& c, std::uint64_t index) {
    GgufTensor t;
    const std::string where = "tensor " + std::to_string(index);
    std::optional<std::string> name = c.string(where + "'s name", kMaxTensorName);
    if (!name) c.fail(fmt::format("{}: name longer than {} bytes (ggml's GGML_MAX_NAME)", where, kMaxTensorName));
    t.name = *name;
    const std::string what = "tensor \"" + printable(t.name) + "\"";
    const std::uint32_t n_dims = c.u32(what + "'s n_dims");
    if (n_dims < 1 || n_dims > kMaxDims) c.fail(fmt::format("{}: n_dims: expected 1 to {}, found {}", what, kMaxDims, n_dims));
    t.elements = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
        const std::uint64_t n = c.u64(what + "'s dimension " + std::to_string(d));
        if (n > static_cast<std::uint64_t>(INT64_MAX) || __builtin_mul_overflow(t.elements, static_cast<std::int64_t>(n), &t.elements))
            c.fail(fmt::format("{}: dimensions multiply past 2^63 elements", what));
        t.dims.push_back(static_cast<std::int64_t>(n));
    }
    t.type = c.u32(what + "'s ggml type");
    const GgmlType* info = ggml_type_info(t.type);
    if (!info) c.fail(fmt::format("{}: unknown ggml type {} (kvplan knows ggml's types 0 to 41 but the removed ones)", what, t.type));
    if (t.dims[0] % info->block != 0)
        c.fail(fmt::format("{}: a row of {} elements is not a multiple of {}'s block of {}", what, t.dims[0], info->name, info->block));
    const std::int64_t rows = t.dims[0] == 0 ? 0 : t.elements / t.dims[0];
    std::int64_t row_bytes = 0;
    if (__builtin_mul_overflow(t.dims[0] / info->block, info->bytes, &row_bytes) || __builtin_mul_overflow(row_bytes, rows, &t.bytes))
        c.fail(fmt::format("{}: its size in bytes passes 2^63", what));
    t.offset = c.u64(what + "'s data offset");
    return t;
}

// The data starts at the first multiple of the alignment after the tensor
// infos; each tensor's bytes must lie inside the file, as llama.cpp checks
// ("tensor data is not within the file bounds").
void check_data(const Cursor& c, std::uint64_t file_size, GgufHeader& h) {
    h.data_offset = (c.pos() + h.alignment - 1) / h.alignment * h.alignment;
    std::set<std::string> names;
    for (const GgufTensor& t : h.tensors) {
        const std::string what = "tensor \"" + printable(t.name) + "\"";
        if (!names.insert(t.name).second) c.fail("duplicate " + what);
        if (t.offset % h.alignment != 0) c.fail(fmt::format("{}: data offset {} is not a multiple of the alignment {}", what, t.offset, h.alignment));
        const std::uint64_t bytes = static_cast<std::uint64_t>(t.bytes);
        if (h.data_offset > file_size || t.offset > file_size - h.data_offset || bytes > file_size - h.data_offset - t.offset)
            c.fail(fmt::format("{}: its {} bytes of data at offset {} run past the end of the file ({} bytes; a partial download?)", what, t.bytes,
                               t.offset, file_size));
    }
}

}  // namespace

GgufHeader read_gguf_header(std::istream& in, std::uint64_t file_size, const std::string& source) {
    Cursor c(in, file_size, source);
    GgufHeader h;
    std::string magic(4, '\0');
    c.need(4, "the magic \"GGUF\"");
    for (char& ch : magic) ch = static_cast<char>(c.uint(1, "the magic \"GGUF\""));
    if (magic != "GGUF") c.fail("not a GGUF file: expected the magic \"GGUF\" in the first 4 bytes, found \"" + printable(magic) + "\"");
    h.version = c.u32("the GGUF version");
    if (h.version == 1)
        c.fail("GGUF version 1 (32-bit counts, llama.cpp before August 2023) is not supported: convert the model again with a current llama.cpp");
    if (h.version == 0x02000000 || h.version == 0x03000000) c.fail("a big-endian GGUF file: kvplan reads little-endian GGUF (versions 2 and 3)");
    if (h.version != 2 && h.version != 3) c.fail(fmt::format("GGUF version {}: expected 2 or 3", h.version));
    const std::uint64_t tensor_count = c.u64("tensor_count");
    const std::uint64_t kv_count = c.u64("metadata_kv_count");
    read_metadata(c, kv_count, h);
    if (tensor_count > kMaxTensors || tensor_count > c.left() / 32)  // a tensor info is at least 8 + 4 + 8 + 4 + 8 bytes
        c.fail(fmt::format("tensor_count: expected at most {} tensors (and no more than the file holds), found {}",
                           std::min<std::uint64_t>(kMaxTensors, c.left() / 32), tensor_count));
    h.tensors.reserve(static_cast<std::size_t>(tensor_count));
    for (std::uint64_t i = 0; i < tensor_count; ++i) h.tensors.push_back(read_tensor_info(c, i));
    check_data(c, file_size, h);
    return h;
}

bool is_gguf_file(const std::string& path) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) return false;
    std::string ext = fs::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (ext == ".gguf") return true;
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    return in.read(magic, 4) && std::string(magic, 4) == "GGUF";
}

ModelSpec load_gguf(const std::string& path) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) usage_error(path + ": not a regular file");
    const auto size = fs::file_size(path, ec);
    if (ec) usage_error(path + ": cannot read: " + ec.message());
    std::ifstream in(path, std::ios::binary);
    if (!in) usage_error(path + ": cannot open for reading");
    ModelSpec spec = gguf_model(read_gguf_header(in, size, path), path);
    spec.name = path;
    return spec;
}

}  // namespace kvplan
