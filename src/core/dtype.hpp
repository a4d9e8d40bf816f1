// Element types for weights and the KV cache, and the resolution of `auto`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvplan {

// Fp4 is a math path only (Blackwell's FP4 tensor cores, for NVFP4 weights):
// parse_dtype does not accept it, so no KV cache or checkpoint is fp4.
enum class Dtype { Fp32, Fp16, Bf16, Fp8, Int8, Int4, Fp4 };

// Bits per element; int4 packs two elements per byte.
int dtype_bits(Dtype d);

// The short name kvplan prints and accepts: fp32, fp16, bf16, fp8, int8, int4
// (and fp4, printed only).
std::string_view dtype_name(Dtype d);

// Parses a dtype as a user writes it (fp16, bf16, fp8, fp8_e4m3, int4, ...)
// or as a config's `torch_dtype` writes it (float16, bfloat16, float32, ...).
// Returns nullopt for anything else; callers name the field in their error.
std::optional<Dtype> parse_dtype(std::string_view text);

// Bytes that `elements` values of `d` occupy, rounded up to whole bytes.
std::int64_t bytes_for(std::int64_t elements, Dtype d);

// vLLM's `--kv-cache-dtype auto` / `--dtype auto`: a bf16 or fp16 checkpoint
// is served as is; fp32 (or an unknown dtype) is served as fp16, because
// vLLM downcasts fp32 models to half precision
// (vllm/config: _get_and_verify_dtype, "we use float16 for float32 models").
Dtype serving_dtype(std::optional<Dtype> checkpoint_dtype);

}  // namespace kvplan
