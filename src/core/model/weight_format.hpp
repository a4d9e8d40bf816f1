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
    std::string name = "auto";           // as the user wrote it
    bool as_checkpoint = true;           // "auto": the checkpoint's own dtype and quantization
    double bits_per_weight = 16;         // including scales
    bool quantize_all_matrices = false;  // GGUF, MLC: embeddings and LM head too; else linear layers only
    bool quantize_head = false;          // the LM head too (gpt-fast's int8 and int4 replace every nn.Linear)
    std::optional<double> head_bits;     // the LM head at its own width (EXL2 converts it at 6 bits)
    Dtype math = Dtype::Bf16;            // the tensor-core path the matmuls run on
    // Which quantized kernels read it, for the engine profile's kernel
    // factor: "" (a plain dtype), gguf, int4, int8, fp8, nvfp4, mxfp4, exl2 or mlc.
    std::string family;
    std::int64_t group_size = 0;  // int4: weights per scale group
};

// auto, fp32, fp16, bf16, fp8 (8 bits, per-channel scales; fp8:w8a8 the
// same, fp8:w8a16 with 16-bit math), nvfp4 (4.5 bits: an fp8 scale per 16,
// fp4 math where the device has it), mxfp4 (4.25 bits: an 8-bit power-of-two
// scale per 32, 16-bit math), int8 (8 bits,
// per-channel scales), int4[:gN] (4 bits + a 16-bit scale per group of N
// weights, default 128: 4.125; an engine that also stores a zero point per
// group stores more, see int4_as_stored), llama.cpp's q8_0 (8.5 bits: 32
// int8 + one fp16 scale), q4_0 (4.5 bits: 32 nibbles + one fp16 scale) and
// q4_k_m (about 4.85 bits: the Q4_K / Q6_K mix; Llama-3-8B Q4_K_M is 4.92 GB
// for 8.03 B parameters), MLC's q4f16_1 (4 bits + an fp16 scale per 32
// weights = 4.5, embeddings and head included) and ExLlamaV2's exl2:B (B
// bits per weight on average, scales included, head at 6 bits). Throws
// Error(Usage) naming `flag` for anything else.
WeightFormat parse_weight_format(const std::string& flag, const std::string& text);

// An int4 format as an engine lays it out: `group_bits` of scale (and zero
// point) per group, and the LM head quantized too when `quantize_head`.
// Other formats are returned unchanged.
WeightFormat int4_as_stored(WeightFormat format, double group_bits, bool quantize_head);

// The weights of `spec` stored in `format`: per part, so MoE and per-GPU
// splits still work. Tensors the format leaves alone keep 16 bits.
WeightSizing size_weights_in(const ModelSpec& spec, const WeightFormat& format);

// The math dtype of the checkpoint as served (fp8 checkpoints run fp8 GEMMs,
// everything else 16-bit).
Dtype checkpoint_math_dtype(const ModelSpec& spec);

}  // namespace kvplan
