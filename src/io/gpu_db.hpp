// The hardware database: the bundled one (models/gpus.json, embedded in the
// binary at build time by cmake/embed_file.cmake, so that `--gpu h100` works
// anywhere), and a team's own devices from a file of the same schema
// (`--gpu-file FILE` or KVPLAN_GPU_FILE; `kvplan gpus --schema` prints it).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/hardware.hpp"

namespace kvplan {

// Every bundled device, in file order. Parsed once.
const std::vector<Gpu>& bundled_gpus();

// The devices commands look up: the bundled ones, then the user file's. A
// user device with a bundled id replaces that device; one whose id or alias
// is another bundled device's alias is an error naming the file.
const std::vector<Gpu>& known_gpus();

// The database device a measured device's name stands for ("cuda: NVIDIA
// H100 80GB HBM3": the name itself, or less its vendor word); nullopt when
// neither is a device id or alias (the caller then asks for --gpu).
std::optional<Gpu> gpu_named_by_device(const std::string& measured);

// The user file for this run: `path`, or when it is empty the file
// KVPLAN_GPU_FILE names, or none. Throws Error(Usage) for a file that cannot
// be read and Error(Data) naming the file and field for bad content.
void use_gpu_file(const std::string& path);

// The bundled devices with `user`'s added or replacing them (see known_gpus).
std::vector<Gpu> merge_gpus(const std::vector<Gpu>& bundled, const std::vector<Gpu>& user, const std::string& source);

// The JSON Schema of a device file (models/gpus.schema.json, embedded).
const char* gpu_file_schema();

}  // namespace kvplan
