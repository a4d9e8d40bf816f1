#include "core/memory/engine.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace kvplan {

namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

// vllm/engine/arg_utils.py EngineArgs.get_batch_defaults: "device_memory >=
// 70 * GiB_bytes and 'a100' not in device_name" picks the larger defaults.
bool vllm_large_device(const Gpu& gpu) {
    if (gpu.engine_total_bytes() < 70 * kGiB) return false;
    // "a100" anywhere in the name or id, in any case (without building a lowered copy: sweeps ask per plan).
    auto has_a100 = [](const std::string& text) {
        static constexpr char kWord[] = "a100";
        for (std::size_t i = 0; i + 4 <= text.size(); ++i) {
            std::size_t k = 0;
            while (k < 4 && std::tolower(static_cast<unsigned char>(text[i + k])) == kWord[k]) ++k;
            if (k == 4) return true;
        }
        return false;
    };
    return !has_a100(gpu.name) && !has_a100(gpu.id);
}

}  // namespace

const char* engine_name(Engine e) {
    switch (e) {
        case Engine::Generic: return "generic";
        case Engine::Vllm: return "vllm";
        case Engine::VllmV0: return "vllm-v0";
        case Engine::Sglang: return "sglang";
        case Engine::Trtllm: return "trtllm";
    }
    return "?";
}

const char* engine_label(Engine e) {
    switch (e) {
        case Engine::Generic: return "generic paged engine";
        case Engine::Vllm: return "vLLM (V1 engine)";
        case Engine::VllmV0: return "vLLM (legacy V0 engine)";
        case Engine::Sglang: return "SGLang";
        case Engine::Trtllm: return "TensorRT-LLM";
    }
    return "?";
}

Engine parse_engine(const std::string& text) {
    for (Engine e : {Engine::Generic, Engine::Vllm, Engine::VllmV0, Engine::Sglang, Engine::Trtllm})
        if (text == engine_name(e)) return e;
    if (text == "tensorrt-llm" || text == "trt-llm") return Engine::Trtllm;
    usage_error("--engine: expected generic, vllm, vllm-v0, sglang or trtllm, found \"" + text + "\"");
}

double default_mem_fraction(Engine e, std::int64_t tp) {
    if (e == Engine::Sglang) {
        if (tp >= 16) return 0.79;
        if (tp >= 8) return 0.81;
        if (tp >= 4) return 0.85;
        if (tp >= 2) return 0.87;
        return 0.88;
    }
    return 0.9;
}

const char* mem_fraction_flag(Engine e) {
    switch (e) {
        case Engine::Sglang: return "--mem-fraction-static";
        case Engine::Trtllm: return "free_gpu_memory_fraction";
        case Engine::Generic: return "--mem-util";
        default: return "--gpu-memory-utilization";
    }
}

bool fraction_of_free_memory(Engine e) {
    return e == Engine::Trtllm;
}

std::int64_t default_block_size(Engine e) {
    switch (e) {
        case Engine::Sglang: return 1;
        case Engine::Trtllm: return 32;
        default: return 16;
    }
}

std::int64_t default_max_batched_tokens(Engine e, const Gpu& gpu, std::int64_t max_model_len) {
    switch (e) {
        case Engine::VllmV0: return std::max<std::int64_t>(max_model_len, 2048);
        case Engine::Sglang: return gpu.engine_total_bytes() < 25'000 * (std::int64_t{1} << 20) ? 2048 : 8192;
        case Engine::Trtllm: return 8192;
        default: return vllm_large_device(gpu) ? 8192 : 2048;
    }
}

std::int64_t default_max_num_seqs(Engine e, const Gpu& gpu) {
    if (e == Engine::VllmV0) return 256;
    return vllm_large_device(gpu) ? 1024 : 256;
}

}  // namespace kvplan
