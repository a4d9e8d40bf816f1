#include "report/engine_log.hpp"

#include <algorithm>
#include <cstdio>

#include "core/digits.hpp"

namespace kvplan {

namespace {

// Two decimals, as the engines print them (vLLM's and SGLang's "%.2f").
std::string two_decimals(double value) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.2f", value);
    return buf;
}

std::string gib_text(std::int64_t bytes) {
    return two_decimals(static_cast<double>(bytes) / 1073741824.0);
}

// vllm/utils/mem_utils.py format_gib: round(bytes / GiB, 2) printed as Python
// prints a float, so "1.0", "0.95", "-0.7" (the RTX 3090 0.17.1 and A100
// 0.19.1 logs); kvplan uses it when --vllm-version names 0.17 or later, the
// releases whose logs show it, and "%.2f" otherwise.
std::string format_gib(std::int64_t bytes) {
    std::string text = two_decimals(static_cast<double>(bytes) / 1073741824.0);
    if (text == "-0.00") text = "0.00";
    while (text.size() > 1 && text.back() == '0' && text[text.size() - 2] != '.') text.pop_back();
    return text;
}

// vLLM's messages point at its memory guide (vllm#53013 quotes the link).
constexpr const char* kConservingMemory = " See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.";

// vllm/v1/worker/gpu_worker.py logs the pool; vllm/v1/core/kv_cache_utils.py
// get_kv_cache_configs then checks that one max_model_len request fits
// (_check_enough_kv_cache_memory, which raises before anything else is
// logged) and reports the pool (_report_kv_cache_config).
std::vector<std::string> vllm_lines(const CapacityPlan& p, const EngineLogFigures& f) {
    const std::int64_t len = p.max_model_len;
    const std::int64_t blocks = p.num_blocks.value_or(0);
    const bool python_floats = p.vllm_release && (p.vllm_release->major > 0 || p.vllm_release->minor >= 17);
    auto gib = [&](std::int64_t bytes) { return python_floats ? format_gib(bytes) : gib_text(bytes); };
    std::vector<std::string> out{"Available KV cache memory: " + gib(p.budget.kv_pool_bytes) + " GiB"};
    if (p.budget.kv_pool_bytes <= 0) {
        out.push_back("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine." +
                      std::string(kConservingMemory));
        return out;
    }
    if (f.max_len_request_blocks > blocks) {
        // The estimate is named only when it is positive.
        const std::int64_t estimate = p.longest_len_one_request.value_or(0);
        out.push_back("ValueError: To serve at least one request with the models's max seq len (" + std::to_string(len) + "), (" +
                      gib(f.max_len_request_bytes) + " GiB KV cache is needed, which is larger than the available KV cache memory (" +
                      gib(p.budget.kv_pool_bytes) + " GiB). " +
                      (estimate > 0 ? "Based on the available memory, the estimated maximum model length is " + std::to_string(estimate) + ". "
                                    : std::string()) +
                      "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine." + kConservingMemory);
        return out;
    }
    const std::string conc = two_decimals(static_cast<double>(blocks) / static_cast<double>(f.max_len_request_blocks));
    out.push_back("GPU KV cache size: " + group_digits(p.kv_cache_tokens.value_or(0)) + " tokens");
    out.push_back("Maximum concurrency for " + group_digits(len) + " tokens per request: " + conc + "x");
    return out;
}

// vLLM V0's worker log and its max-seq-len check.
std::vector<std::string> vllm_v0_lines(const CapacityPlan& p, const EngineLogFigures& f) {
    const std::int64_t len = p.max_model_len;
    const std::int64_t tokens = p.kv_cache_tokens.value_or(0);
    std::vector<std::string> out{"# GPU blocks: " + std::to_string(p.num_blocks.value_or(0)) + ", # CPU blocks: " + std::to_string(f.cpu_swap_blocks),
                                 "Maximum concurrency for " + std::to_string(len) +
                                     " tokens per request: " + two_decimals(static_cast<double>(tokens) / static_cast<double>(len)) + "x"};
    if (len > tokens)
        out.push_back("ValueError: The model's max seq len (" + std::to_string(len) +
                      ") is larger than the maximum number of tokens that can be stored in KV cache (" + std::to_string(tokens) + ").");
    return out;
}

// SGLang's memory pool log (mem_cache/memory_pool.py) and its server args line.
std::vector<std::string> sglang_lines(const CapacityPlan& p, const EngineLogFigures& f) {
    const std::int64_t tokens = p.kv_cache_tokens.value_or(0);
    std::vector<std::string> out;
    if (f.mla) {
        out.push_back("KV Cache is allocated. #tokens: " + std::to_string(tokens) + ", KV size: " + gib_text(f.kv_cache_bytes) + " GB");
    } else {
        const std::string half = gib_text(f.kv_cache_bytes / 2);
        out.push_back("KV Cache is allocated. #tokens: " + std::to_string(tokens) + ", K size: " + half + " GB, V size: " + half + " GB");
    }
    out.push_back("max_total_num_tokens=" + std::to_string(tokens) + ", mem_fraction_static=" + two_decimals(p.budget.mem_fraction));
    return out;
}

std::vector<std::string> trtllm_lines(const CapacityPlan& p, const EngineLogFigures& f) {
    return {"[TensorRT-LLM][INFO] Allocated " + gib_text(f.kv_cache_bytes) + " GiB for max tokens in paged KV cache (" +
            std::to_string(p.kv_cache_tokens.value_or(0)) + ")."};
}

}  // namespace

std::vector<std::string> engine_log_lines(const CapacityPlan& p) {
    if (!p.engine_log) return {};
    switch (p.engine) {
        case Engine::Vllm: return vllm_lines(p, *p.engine_log);
        case Engine::VllmV0: return vllm_v0_lines(p, *p.engine_log);
        case Engine::Sglang: return sglang_lines(p, *p.engine_log);
        case Engine::Trtllm: return trtllm_lines(p, *p.engine_log);
        default: return {};
    }
}

}  // namespace kvplan
