// quantization_config -> Quantization. Only what weight bytes depend on.
#include <algorithm>

#include "core/model/config_parts.hpp"

namespace kvplan {

namespace {

// modules_to_not_convert / ignore patterns (e.g. gpt-oss: "model.layers.*.self_attn",
// "model.layers.*.mlp.router", "model.embed_tokens", "lm_head") -> whole parts.
void keep_parts_from(const ConfigReader& q, Quantization& out) {
    for (const char* key : {"modules_to_not_convert", "ignored_layers", "llm_int8_skip_modules", "ignore", "exclude_modules"}) {
        auto names = q.get_string_list(key);
        if (!names) continue;
        for (const std::string& n : *names) {
            auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
            // A single projection (e.g. "...self_attn.kv_b_proj") is too small a
            // part to model; only whole parts are kept unquantized.
            if (n.size() >= 5 && n.compare(n.size() - 5, 5, "_proj") == 0) continue;
            if (has("attn")) out.keep_parts.push_back(ParamPart::Attention);
            if (has("router") || has("mlp.gate") || n == "gate") out.keep_parts.push_back(ParamPart::Router);
            if (has("embed")) out.keep_parts.push_back(ParamPart::Embedding);
            if (has("lm_head")) out.keep_parts.push_back(ParamPart::Head);
            if (has("shared_expert")) out.keep_parts.push_back(ParamPart::SharedExperts);
            if (has("mamba") || has("mixer")) out.keep_parts.push_back(ParamPart::Mixer);
        }
    }
}

// compressed-tensors (llm-compressor; vLLM's most common quantized format):
// config_groups.<group>.weights = {num_bits, type, strategy, group_size,
// symmetric, block_structure}. Scales are stored in the model's dtype
// (2 bytes) per channel or group, fp32 per tensor or block; NVFP4
// ("tensor_group") keeps an fp8 scale per 16 values plus an fp32 global scale.
void parse_compressed_tensors(const ConfigReader& q, Quantization& out) {
    auto groups = q.child("config_groups");
    if (!groups) q.fail("config_groups", "required field is missing (expected the quantization groups)");
    const nlohmann::json* all = q.find({"config_groups"});
    if (all->size() != 1)
        q.fail("config_groups",
               "has " + std::to_string(all->size()) + " groups; kvplan sizes compressed-tensors checkpoints with a single quantization group");
    const std::string group_name = all->begin().key();
    auto group = groups->child(group_name.c_str());
    if (!group) groups->fail(group_name, "expected an object (the group's targets and weights scheme), found null");
    auto w = group->child("weights");
    if (!w) group->fail("weights", "required field is missing (expected the weight quantization scheme)");
    out.method = QuantMethod::CompressedTensors;
    out.bits = static_cast<int>(w->require_int({"num_bits"}, 1, 16));
    std::string strategy = w->get_string("strategy").value_or("tensor");
    if (strategy == "tensor") {
        out.group_size = -1;
        out.scale_bytes = 4;
    } else if (strategy == "channel") {
        out.group_size = 0;
        out.scale_bytes = 2;
    } else if (strategy == "group") {
        out.group_size = w->require_int({"group_size"}, 1, 1'000'000);
        out.scale_bytes = 2;
    } else if (strategy == "tensor_group") {
        out.group_size = w->require_int({"group_size"}, 1, 1'000'000);
        out.scale_bytes = 1;
        out.tensor_bytes = 4;
    } else if (strategy == "block") {
        auto block = w->get_int_list("block_structure", 1, 1'000'000);
        if (!block || block->size() != 2) w->fail("block_structure", "expected two integers [rows, cols] for the block strategy");
        out.block_rows = (*block)[0];
        out.block_cols = (*block)[1];
        out.scale_bytes = 4;
    } else {
        w->fail("strategy", "unknown strategy \"" + strategy + "\" (expected tensor, channel, group, tensor_group or block)");
    }
    if (!w->get_bool("symmetric").value_or(true)) out.zero_bits = out.bits;
    if (q.get_string("format").value_or("") == "pack-quantized") out.tensor_bytes += 16;  // weight_shape: 2 x int64
}

}  // namespace

Quantization parse_quantization(const ConfigReader& top) {
    Quantization out;
    auto q = top.child("quantization_config");
    if (!q) return out;
    auto method = q->get_string("quant_method");
    const char* known = "fp8, gptq, awq, mxfp4, bitsandbytes, compressed-tensors, modelopt or fbgemm_fp8";
    if (!method) q->fail("quant_method", std::string("required field is missing (expected ") + known + ")");
    if (*method == "fp8") {
        // DeepSeek-V3 style: e4m3 weights with one fp32 scale (weight_scale_inv)
        // per weight_block_size block (e.g. [128, 128]), or one per tensor.
        out.method = QuantMethod::Fp8;
        out.bits = 8;
        if (auto block = q->get_int_list("weight_block_size", 1, 1'000'000)) {
            if (block->size() != 2) q->fail("weight_block_size", "expected two integers [rows, cols], found " + std::to_string(block->size()));
            out.block_rows = (*block)[0];
            out.block_cols = (*block)[1];
        }
    } else if (*method == "gptq" || *method == "awq") {
        // qweight (bits each), an fp16 scale and a packed zero point per (row,
        // group); GPTQ also stores g_idx, one int32 per input (AutoGPTQ QuantLinear).
        out.method = *method == "gptq" ? QuantMethod::Gptq : QuantMethod::Awq;
        out.bits = static_cast<int>(q->get_int({"bits", "w_bit"}, 2, 8).value_or(4));
        auto group = q->get_int({"group_size", "q_group_size"}, -1, 1'000'000).value_or(128);
        if (group == 0) q->fail("group_size", "expected a positive group size or -1 (per output row), found 0");
        out.group_size = group < 0 ? 0 : group;
        out.scale_bytes = 2;
        out.zero_bits = out.bits;
        out.input_index = out.method == QuantMethod::Gptq;
    } else if (*method == "mxfp4") {
        // OCP MX FP4: 4-bit e2m1 values with one 8-bit e8m0 scale per 32 inputs.
        out.method = QuantMethod::Mxfp4;
        out.bits = 4;
        out.group_size = 32;
        out.scale_bytes = 1;
    } else if (*method == "bitsandbytes") {
        out.method = QuantMethod::BitsAndBytes;
        bool four = q->get_bool("load_in_4bit").value_or(false);
        bool eight = q->get_bool("load_in_8bit").value_or(false);
        if (!four && !eight) q->fail("load_in_4bit", "bitsandbytes config sets neither load_in_4bit nor load_in_8bit");
        if (four) {
            // NF4/FP4 in blocks of 64 with an fp32 absmax each, or an 8-bit absmax
            // plus an fp32 scale per 256 blocks when double-quantized (QLoRA §3).
            out.bits = 4;
            out.group_size = 64;
            out.second_level_scales = q->get_bool("bnb_4bit_use_double_quant").value_or(false);
            out.scale_bytes = out.second_level_scales ? 1 : 4;
        } else {
            out.bits = 8;  // LLM.int8(): int8 values and an fp32 scale per row (SCB)
            out.group_size = 0;
            out.scale_bytes = 4;
        }
    } else if (*method == "compressed-tensors") {
        parse_compressed_tensors(*q, out);
    } else if (*method == "modelopt") {
        // NVIDIA ModelOpt (TensorRT-LLM, vLLM): FP8 with a per-tensor fp32
        // scale, or NVFP4 with an fp8 scale per 16 values plus an fp32 global scale.
        out.method = QuantMethod::ModelOpt;
        std::string algo = q->get_string("quant_algo").value_or("");
        if (algo == "FP8") {
            out.bits = 8;
        } else if (algo == "NVFP4") {
            out.bits = 4;
            out.group_size = q->get_int({"group_size"}, 1, 1'000'000).value_or(16);
            out.scale_bytes = 1;
            out.tensor_bytes = 4;
        } else {
            q->fail("quant_algo", "unsupported ModelOpt algorithm \"" + algo + "\" (expected FP8 or NVFP4)");
        }
        // vLLM (ModelOptFp8Config.from_config) caches KV in fp8 when the checkpoint says so.
        const std::string kv = q->get_string("kv_cache_quant_algo").value_or("");
        if (kv == "FP8") out.kv_cache_dtype = Dtype::Fp8;
        else if (!kv.empty()) q->fail("kv_cache_quant_algo", "unsupported KV cache algorithm \"" + kv + "\" (expected FP8)");
    } else if (*method == "fbgemm_fp8") {
        out.method = QuantMethod::FbgemmFp8;  // e4m3 values, an fp32 scale per output row
        out.bits = 8;
        out.group_size = 0;
    } else {
        q->fail("quant_method", "unsupported quantization \"" + *method + "\" (kvplan knows " + known + ")");
    }
    keep_parts_from(*q, out);
    return out;
}

}  // namespace kvplan
