// GGUF, llama.cpp's model file: the header only (metadata and tensor infos),
// never the tensor data, read into the same ModelSpec a config.json gives.
// Format: ggml docs/gguf.md (versions 2 and 3, little endian); the reader
// follows ggml's gguf.cpp (gguf_init_from_file_impl) in what it refuses.
// Every count and length is checked against the bytes left in the file
// before anything is allocated, so a hostile header costs at most its size.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model/model_spec.hpp"

namespace kvplan {

// One metadata value. Integers and floats are kept, strings up to
// kGgufKeptString bytes, integer arrays up to kGgufKeptInts elements; larger
// strings and every other array (tokenizer tokens, merges) keep their count only.
struct GgufValue {
    std::uint32_t type = 0;               // GGUF value type: UINT8 0 ... FLOAT64 12
    std::optional<std::int64_t> integer;  // integer types and BOOL (0/1); nullopt for a UINT64 past INT64_MAX
    std::optional<double> number;         // FLOAT32 / FLOAT64, and integers as doubles
    std::optional<std::string> text;      // STRING, when short enough to keep
    std::uint32_t element_type = 0;       // ARRAY: its elements' type
    std::uint64_t count = 0;              // ARRAY: element count
    std::vector<std::int64_t> ints;       // ARRAY of integers, when short enough to keep
};

constexpr std::uint64_t kGgufKeptString = 4096;
constexpr std::uint64_t kGgufKeptInts = 65'536;

struct GgufTensor {
    std::string name;                // e.g. "blk.0.attn_q.weight"
    std::vector<std::int64_t> dims;  // ggml order: dims[0] is the row length (e.g. [4096, 128256] for token_embd)
    std::uint32_t type = 0;          // ggml_type id; e.g. 12 (Q4_K)
    std::uint64_t offset = 0;        // from the start of the data section
    std::int64_t elements = 0;
    std::int64_t bytes = 0;  // elements / block size x block bytes
};

struct GgufHeader {
    std::uint32_t version = 0;
    std::map<std::string, GgufValue> metadata;
    std::vector<GgufTensor> tensors;
    std::uint64_t alignment = 32;   // general.alignment (GGUF_DEFAULT_ALIGNMENT 32)
    std::uint64_t data_offset = 0;  // where the tensor data starts
};

// A ggml tensor type as ggml's type_traits table has it (ggml/src/ggml.c).
struct GgmlType {
    const char* name;        // e.g. "Q4_K"
    std::int64_t block = 0;  // elements per block (blck_size)
    std::int64_t bytes = 0;  // bytes per block (type_size)
};

// nullptr for an id ggml does not define or has removed (Q4_2, Q4_0_4_4...).
const GgmlType* ggml_type_info(std::uint32_t id);

// A path ending ".gguf", or a regular file whose first four bytes are "GGUF".
bool is_gguf_file(const std::string& path);

// Reads the header from `in`, a stream of `file_size` bytes; `source` names
// it in messages. Throws Error(Data) with "source: what was expected".
GgufHeader read_gguf_header(std::istream& in, std::uint64_t file_size, const std::string& source);

// The ModelSpec of a header: its metadata as the equivalent config.json keys
// through parse_model_config, its tensor infos as the stored weights, and
// llama.cpp's f16 KV cache as what --kv-dtype auto means.
ModelSpec gguf_model(const GgufHeader& header, const std::string& source);

// --model file.gguf. Error(Usage) when the file cannot be opened.
ModelSpec load_gguf(const std::string& path);

}  // namespace kvplan
