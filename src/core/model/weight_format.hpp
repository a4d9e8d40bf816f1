// How the weights are stored when they are read during a step: a dtype, a
// quantized integer format with group scales, or one of llama.cpp's GGUF
// formats (so that published llama.cpp measurements can be compared). The
// bits per weight include the scales.
#pragma once

#include <optional>
#include <string>

#include "core/dtype.hpp"
#include "core/model/model_spec.hpp"
#include "core/model/weights.hpp"

namespace kvplan {

struct WeightFormat {
    std::string name = "auto";     // as the user wrote it
    bool as_checkpoint = true;     // "auto": the checkpoint's own dtype and quantization
    double bits_per_weight = 16;   // including scales
    bool quantize_all_matrices = false;  // GGUF: embeddings and LM head too; else linear layers only
    Dtype math = Dtype::Bf16;      // the tensor-core path the matmuls run on
    // Fraction of the bandwidth its decode kernels reach relative to plain
    // 16-bit weights: llama.cpp's block-quantized dot products dequantize as
    // they stream (0.85, fitted to the Q4_K_M rows of decode_measurements.jsonl).
    double kernel_efficiency = 1.0;
};

// auto, fp32, fp16, bf16, fp8 (8 bits, per-channel scales), int8 (8 bits,
// per-channel scales), int4 (4 bits + an fp16 scale per 128 weights = 4.125),
// and llama.cpp's q8_0 (8.5 bits: 32 int8 + one fp16 scale), q4_0 (4.5 bits:
// 32 nibbles + one fp16 scale) and q4_k_m (about 4.85 bits: the Q4_K / Q6_K
// mix; Llama-3-8B Q4_K_M is 4.92 GB for 8.03 B parameters). Throws
// Error(Usage) naming `flag` for anything else.
WeightFormat parse_weight_format(const std::string& flag, const std::string& text);

// The weights of `spec` stored in `format`: per part, so MoE and per-GPU
// splits still work. Tensors the format leaves alone keep 16 bits.
WeightSizing size_weights_in(const ModelSpec& spec, const WeightFormat& format);

// The math dtype of the checkpoint as served (fp8 checkpoints run fp8 GEMMs,
// everything else 16-bit).
Dtype checkpoint_math_dtype(const ModelSpec& spec);

}  // namespace kvplan
