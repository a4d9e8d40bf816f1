// Serving engines, as data: what each one's memory fraction applies to, its
// page size, its scheduler defaults and what it reserves outside the KV pool.
// Engines differ in these values and in a few small functions (budget.cpp,
// vllm_kv_cache.cpp), not in class hierarchies. Sources: see docs/concurrency.md.
#pragma once

#include <cstdint>
#include <string>

#include "core/hardware.hpp"

namespace kvplan {

enum class Engine {
    Generic,  // the textbook budget: memory x fraction - weights - overhead, paged in blocks
    Vllm,     // vLLM V1 (the current engine): per-layer KV specs, hybrid groups, its log lines
    VllmV0,   // vLLM's legacy V0 engine (before 0.8), whose logs fill old issue threads
    Sglang,   // SGLang: mem_fraction_static of total memory holds weights + KV pool
    Trtllm,   // TensorRT-LLM: free_gpu_memory_fraction of what is free after loading
};

const char* engine_name(Engine engine);   // "vllm", "vllm-v0", ...
const char* engine_label(Engine engine);  // "vLLM V1", ...

// Throws Error(Usage) naming --engine for anything but generic, vllm,
// vllm-v0, sglang or trtllm.
Engine parse_engine(const std::string& text);

// The engine's default memory fraction and the flag that sets it:
// vLLM gpu_memory_utilization 0.9 (0.92 in the newest releases; its
// long-standing default, and most published logs use 0.9); SGLang mem_fraction_static by TP
// degree (0.88 / 0.87 / 0.85 / 0.81 / 0.79, sglang/srt/server_args.py);
// TensorRT-LLM KvCacheConfig.free_gpu_memory_fraction 0.9.
double default_mem_fraction(Engine engine, std::int64_t tp);
const char* mem_fraction_flag(Engine engine);

// Whether the fraction applies to free memory after loading (TensorRT-LLM)
// rather than to total memory (vLLM, SGLang, generic).
bool fraction_of_free_memory(Engine engine);

// Tokens per KV block (page): vLLM 16 (DEFAULT_BLOCK_SIZE), SGLang 1
// (page_size), TensorRT-LLM 32 (tokens_per_block), generic 16.
std::int64_t default_block_size(Engine engine);

// Tokens one forward pass may batch, which sizes the activation peak and
// vLLM's sliding-window worst case. vLLM V1 serving: 8192 on devices with at
// least 70 GiB that are not A100s, else 2048; V0 without chunked prefill:
// max(max_model_len, 2048); SGLang chunked_prefill_size: 2048 below 25,000
// MiB, else 8192; TensorRT-LLM max_num_tokens 8192.
std::int64_t default_max_batched_tokens(Engine engine, const Gpu& gpu, std::int64_t max_model_len);

// Sequences the sampler is profiled with (vLLM max_num_seqs: 1024 on the
// same large devices, else 256; V0 256).
std::int64_t default_max_num_seqs(Engine engine, const Gpu& gpu);

}  // namespace kvplan
