// libFuzzer target: a safetensors header, as kvplan reads one from each
// shard of a checkpoint folder. Bytes -> header JSON -> StoredWeights, then
// the weights of Llama-3.1-8B sized with those stored bytes in place of the
// formula's (the parts' split, pipeline stages). A kvplan::Error is the
// expected answer to bad input; anything else is a bug. Run: `make fuzz`.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "core/memory/parallel.hpp"
#include "core/model/weights.hpp"
#include "io/model_loader.hpp"
#include "io/safetensors_reader.hpp"

using namespace kvplan;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1 || size > 256 * 1024) return -1;
    // The first byte picks how much tensor data follows the header: none, a
    // little, or a 16 GB file's worth, so offsets both fit and overflow.
    static constexpr std::int64_t kData[] = {0, 4096, 16'060'522'496, std::int64_t{1} << 50};
    const std::int64_t data_bytes = kData[data[0] % 4];
    const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
    static const ModelSpec llama = load_model("llama-3.1-8b");
    StoredWeights stored;
    try {
        add_safetensors_header_text("fuzz.safetensors", text, data_bytes, 32, stored);
    } catch (const Error&) {
        return 0;
    }
    ModelSpec spec = llama;
    spec.stored_weights = stored;
    try {
        const WeightSizing w = size_weights(spec);
        for (std::int64_t pp : {1, 2})
            for (const PipelineStage& stage : pipeline_stages(static_cast<std::int64_t>(spec.layers.size()), pp))
                (void)stage_weight_bytes(w, spec, stage, pp, 2);
    } catch (const Error&) {
    }
    return 0;
}
