#include "cli/gpu_options.hpp"

#include "core/byte_size.hpp"
#include "core/error.hpp"
#include "io/gpu_db.hpp"

namespace kvplan {

void add_gpu_options(CLI::App& app, GpuOptions& o, GpuMemFlag gpu_mem) {
    app.add_option("-g,--gpu", o.gpu, "device id or alias from the hardware database (see `kvplan gpus`), e.g. h100-sxm, H100, a100-80gb");
    CLI::Option* mem = app.add_option("--gpu-mem", o.gpu_mem, "describe the device by its memory instead: 80GB (10^9 B), 80GiB (2^30 B) or 80 (GiB)");
    // Not offered: still parsed, so that the command can say why it needs --gpu, but not listed in --help.
    if (gpu_mem == GpuMemFlag::NotOffered) mem->group("");
}

Gpu resolve_gpu(const GpuOptions& o) {
    if (!o.gpu.empty() && !o.gpu_mem.empty()) usage_error("give either --gpu ID or --gpu-mem SIZE, not both");
    if (!o.gpu.empty()) return find_gpu(known_gpus(), o.gpu, o.flag);
    if (!o.gpu_mem.empty()) {
        const bool plain = o.gpu_mem.find_first_not_of("0123456789.") == std::string::npos;
        return gpu_from_memory(parse_byte_size("--gpu-mem", o.gpu_mem, false), o.gpu_mem + (plain ? " GiB" : "") + " GPU");
    }
    usage_error("no device: pass --gpu ID (see `kvplan gpus`) or --gpu-mem SIZE (e.g. 80GB, 80GiB)");
}

}  // namespace kvplan
