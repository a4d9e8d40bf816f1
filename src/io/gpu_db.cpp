#include "io/gpu_db.hpp"

#include "io/model_loader.hpp"

namespace kvplan {

namespace embedded {
extern const char* const kGpuDatabase;
}

const std::vector<Gpu>& bundled_gpus() {
    // A malformed database is a build bug; tests parse it on every run.
    static const std::vector<Gpu> gpus = parse_gpu_database(parse_json_text(embedded::kGpuDatabase, "models/gpus.json"), "models/gpus.json");
    return gpus;
}

}  // namespace kvplan
