#include "core/model/ssm_dims.hpp"

#include "core/checked.hpp"

namespace kvplan {

Mamba1Dims read_mamba1(const ConfigReader& cfg, const ModelDims& dims) {
    const bool jamba = dims.model_type == "jamba";
    Mamba1Dims m;
    std::int64_t expand = cfg.get_int({jamba ? "mamba_expand" : "expand"}, 1, 64).value_or(2);
    m.inner =
        jamba ? checked_mul(expand, dims.hidden) : cfg.get_int({"intermediate_size"}, 1, kMaxHidden * 64).value_or(checked_mul(expand, dims.hidden));
    m.state = jamba ? cfg.get_int({"mamba_d_state"}, 1, 1'000'000).value_or(16) : cfg.get_int({"state_size", "d_state"}, 1, 1'000'000).value_or(16);
    m.conv = jamba ? cfg.get_int({"mamba_d_conv"}, 1, 1024).value_or(4) : cfg.get_int({"conv_kernel", "d_conv"}, 1, 1024).value_or(4);
    // dt_rank "auto" = ceil(hidden / 16) (Mamba paper's default; transformers MambaConfig).
    m.dt_rank = ceil_div(dims.hidden, 16);
    const char* rank_key = jamba ? "mamba_dt_rank" : "time_step_rank";
    if (auto r = cfg.find({rank_key}); r && !r->is_string()) m.dt_rank = cfg.require_int({rank_key}, 1, kMaxHidden);
    m.proj_bias = cfg.get_bool(jamba ? "mamba_proj_bias" : "use_bias").value_or(false);
    m.conv_bias = cfg.get_bool(jamba ? "mamba_conv_bias" : "use_conv_bias").value_or(true);
    return m;
}

Mamba2Dims read_mamba2(const ConfigReader& cfg) {
    Mamba2Dims m;
    m.heads = cfg.require_int({"mamba_num_heads", "mamba_n_heads", "num_heads"}, 1, kMaxHeads);
    m.head_dim = cfg.require_int({"mamba_head_dim", "mamba_d_head", "head_dim"}, 1, 100'000);
    m.groups = cfg.get_int({"n_groups", "mamba_n_groups"}, 1, kMaxHeads).value_or(1);
    m.state = cfg.require_int({"ssm_state_size", "mamba_d_state", "state_size"}, 1, 1'000'000);
    m.conv = cfg.get_int({"conv_kernel", "mamba_d_conv"}, 1, 1024).value_or(4);
    m.proj_bias = cfg.get_bool("use_bias").value_or(cfg.get_bool("mamba_proj_bias").value_or(false));
    m.conv_bias = cfg.get_bool("use_conv_bias").value_or(cfg.get_bool("mamba_conv_bias").value_or(true));
    return m;
}

DeltaNetDims read_delta_net(const ConfigReader& cfg) {
    DeltaNetDims g;
    g.k_heads = cfg.require_int({"linear_num_key_heads"}, 1, kMaxHeads);
    g.v_heads = cfg.require_int({"linear_num_value_heads"}, 1, kMaxHeads);
    g.k_dim = cfg.require_int({"linear_key_head_dim"}, 1, 100'000);
    g.v_dim = cfg.require_int({"linear_value_head_dim"}, 1, 100'000);
    g.conv = cfg.get_int({"linear_conv_kernel_dim"}, 1, 1024).value_or(4);
    return g;
}

}  // namespace kvplan
