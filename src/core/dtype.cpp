#include "core/dtype.hpp"

#include <algorithm>
#include <cctype>

#include "core/checked.hpp"

namespace kvplan {

int dtype_bits(Dtype d) {
    switch (d) {
        case Dtype::Fp32: return 32;
        case Dtype::Fp16: return 16;
        case Dtype::Bf16: return 16;
        case Dtype::Fp8: return 8;
        case Dtype::Int8: return 8;
        case Dtype::Int4: return 4;
        case Dtype::Fp4: return 4;
    }
    return 16;
}

std::string_view dtype_name(Dtype d) {
    switch (d) {
        case Dtype::Fp32: return "fp32";
        case Dtype::Fp16: return "fp16";
        case Dtype::Bf16: return "bf16";
        case Dtype::Fp8: return "fp8";
        case Dtype::Int8: return "int8";
        case Dtype::Int4: return "int4";
        case Dtype::Fp4: return "fp4";
    }
    return "?";
}

std::optional<Dtype> parse_dtype(std::string_view text) {
    std::string s(text);
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    if (s.rfind("torch.", 0) == 0) s = s.substr(6);  // "torch.bfloat16" in some configs
    if (s == "fp32" || s == "float32" || s == "float") return Dtype::Fp32;
    if (s == "fp16" || s == "float16" || s == "half") return Dtype::Fp16;
    if (s == "bf16" || s == "bfloat16") return Dtype::Bf16;
    // vLLM's kv-cache dtypes: fp8 (= fp8_e4m3 on CUDA), fp8_e4m3, fp8_e5m2.
    if (s == "fp8" || s == "fp8_e4m3" || s == "fp8_e5m2" || s == "float8_e4m3fn" || s == "float8_e5m2") return Dtype::Fp8;
    if (s == "int8") return Dtype::Int8;
    if (s == "int4") return Dtype::Int4;
    return std::nullopt;
}

std::int64_t bytes_for(std::int64_t elements, Dtype d) {
    return ceil_div(checked_mul(elements, dtype_bits(d), "bits of a tensor"), 8);
}

Dtype serving_dtype(std::optional<Dtype> checkpoint_dtype) {
    if (checkpoint_dtype == Dtype::Bf16) return Dtype::Bf16;
    return Dtype::Fp16;
}

}  // namespace kvplan
