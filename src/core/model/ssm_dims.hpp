// The shapes of recurrent mixers (Mamba-1, Mamba-2, Gated DeltaNet), read
// from a config once. The layer plan sizes their state from these, and the
// parameter count builds their tensors from the same values, so the two can
// never read different keys or defaults.
#pragma once

#include <cstdint>

#include "core/model/config_parts.hpp"

namespace kvplan {

// Mamba-1 (mamba, falcon_mamba; Jamba spells its keys mamba_*).
struct Mamba1Dims {
    std::int64_t inner = 0;    // d_inner = intermediate_size, or expand x hidden; e.g. 5120 (Mamba-2.8B)
    std::int64_t state = 16;   // d_state = state_size; e.g. 16
    std::int64_t conv = 4;     // d_conv = conv_kernel; e.g. 4
    std::int64_t dt_rank = 0;  // time_step_rank; "auto" = ceil(hidden / 16); e.g. 160
    bool proj_bias = false;    // use_bias
    bool conv_bias = true;     // use_conv_bias
};
Mamba1Dims read_mamba1(const ConfigReader& cfg, const ModelDims& dims);

// Mamba-2 (mamba2, Nemotron-H, Bamba, Granite-4).
struct Mamba2Dims {
    std::int64_t heads = 0;     // mamba_num_heads; e.g. 128 (Nemotron-H-8B)
    std::int64_t head_dim = 0;  // mamba_head_dim; e.g. 64
    std::int64_t groups = 1;    // n_groups; e.g. 8
    std::int64_t state = 0;     // ssm_state_size; e.g. 128
    std::int64_t conv = 4;      // conv_kernel
    bool proj_bias = false;
    bool conv_bias = true;
    std::int64_t inner() const { return heads * head_dim; }
    std::int64_t conv_dim() const { return inner() + 2 * groups * state; }  // x, B, C go through the conv
};
Mamba2Dims read_mamba2(const ConfigReader& cfg);

// Gated DeltaNet linear attention (Qwen3-Next "linear_attention" layers).
struct DeltaNetDims {
    std::int64_t k_heads = 0;  // linear_num_key_heads; e.g. 16
    std::int64_t v_heads = 0;  // linear_num_value_heads; e.g. 32
    std::int64_t k_dim = 0;    // linear_key_head_dim; e.g. 128
    std::int64_t v_dim = 0;    // linear_value_head_dim; e.g. 128
    std::int64_t conv = 4;     // linear_conv_kernel_dim
    std::int64_t key_dim() const { return k_heads * k_dim; }
    std::int64_t value_dim() const { return v_heads * v_dim; }
    std::int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }  // q, k, v go through the conv
};
DeltaNetDims read_delta_net(const ConfigReader& cfg);

}  // namespace kvplan
