// Reads what a checkpoint's *.safetensors files store, from their JSON
// headers only: each file starts with an 8-byte little-endian header length
// N, then N bytes of JSON naming every tensor's dtype, shape and byte range
// (huggingface/safetensors, docs "Format"). The tensor data is never read, so
// a 700 GB checkpoint costs a few megabytes of I/O.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/model/model_spec.hpp"

namespace kvplan {

// safetensors refuses headers over 100 MB (MAX_HEADER_SIZE in safetensors/src/tensor.rs).
constexpr std::int64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// The shards of the checkpoint in `folder`: the files model.safetensors.index.json's
// weight_map names (in first-named order), else every *.safetensors there
// (sorted). `missing` gets the index's files that are not on disk.
struct SafetensorsShards {
    std::vector<std::filesystem::path> files;       // on disk
    std::vector<std::string> missing;               // named by the index, not on disk
    std::optional<std::int64_t> index_total_bytes;  // the index's metadata.total_size
};
SafetensorsShards find_safetensors_shards(const std::filesystem::path& folder);

// Adds one file's tensors to `out`. Tensors of decoder layers at or beyond
// `decoder_layers` (MTP / next-token-prediction layers, which vLLM does not
// load for the language model) are counted as skipped. Throws Error(Data)
// naming the file and the tensor for a malformed header.
void add_safetensors_header(const std::filesystem::path& file, std::int64_t decoder_layers, StoredWeights& out);

// The same for a header's JSON text, followed by `data_bytes` of tensor data
// (what the fuzz target drives).
void add_safetensors_header_text(const std::string& where, const std::string& text, std::int64_t data_bytes, std::int64_t decoder_layers,
                                 StoredWeights& out);

// Every shard's header, or nullopt when the folder holds no safetensors file.
// Warnings (shards missing from disk) go to `warnings`; with any missing the
// stored figures are incomplete and nullopt is returned.
std::optional<StoredWeights> read_safetensors_weights(const std::filesystem::path& folder, std::int64_t decoder_layers,
                                                      std::vector<std::string>& warnings);

}  // namespace kvplan
