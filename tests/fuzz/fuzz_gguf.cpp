// libFuzzer target: the GGUF path `kvplan size --model file.gguf` takes.
// Bytes -> GGUF header (io/gguf_reader) -> ModelSpec -> KV sizing and weight
// bytes. The header reader must refuse every malformed count, length and
// type with a kvplan::Error before it allocates for it; anything else (a
// crash, a sanitizer report, an allocation past -rss_limit_mb, another
// exception) is a bug. Build and run: `make fuzz`.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "core/memory/kv_size.hpp"
#include "core/model/weights.hpp"
#include "io/gguf_reader.hpp"

using namespace kvplan;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 1024 * 1024) return -1;  // headers of small models; keep executions fast
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    ModelSpec spec;
    try {
        std::istringstream in(bytes);
        // The tensors' data must lie inside the file: an even-sized input
        // stands for a header followed by 1 TiB of data, an odd-sized one for
        // the header alone, so that both paths are fuzzed.
        const std::uint64_t file_size = size % 2 == 0 ? size + (std::uint64_t{1} << 40) : size;
        spec = gguf_model(read_gguf_header(in, file_size, "fuzz.gguf"), "fuzz.gguf");
    } catch (const Error&) {
        return 0;
    }
    try {
        KvOptions o;
        o.context = 4096;
        o.batch = 8;
        (void)size_kv(spec, o);
    } catch (const Error&) {
    }
    try {
        (void)size_weights(spec);
    } catch (const Error&) {
    }
    return 0;
}
