// The bundled hardware database (models/gpus.json), embedded in the binary at
// build time (cmake/embed_file.cmake) so that `--gpu h100` works anywhere.
#pragma once

#include <vector>

#include "core/hardware.hpp"

namespace kvplan {

// Every device, in file order. Parsed once.
const std::vector<Gpu>& bundled_gpus();

}  // namespace kvplan
