// quantization_config -> Quantization. Only what weight bytes depend on.
#include <algorithm>

#include "core/config_parts.hpp"

namespace kvplan {

namespace {

// modules_to_not_convert patterns (e.g. gpt-oss: "model.layers.*.self_attn",
// "model.layers.*.mlp.router", "model.embed_tokens", "lm_head") -> parts.
void keep_parts_from(const ConfigReader& q, Quantization& out) {
    for (const char* key : {"modules_to_not_convert", "ignored_layers", "llm_int8_skip_modules"}) {
        auto names = q.get_string_list(key);
        if (!names) continue;
        for (const std::string& n : *names) {
            auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
            if (has("attn")) out.keep_parts.push_back(ParamPart::Attention);
            if (has("router") || has("mlp.gate") || n == "gate") out.keep_parts.push_back(ParamPart::Router);
            if (has("embed")) out.keep_parts.push_back(ParamPart::Embedding);
            if (has("lm_head")) out.keep_parts.push_back(ParamPart::Head);
            if (has("shared_expert")) out.keep_parts.push_back(ParamPart::SharedExperts);
            if (has("mamba") || has("mixer")) out.keep_parts.push_back(ParamPart::Mixer);
        }
    }
}

}  // namespace

Quantization parse_quantization(const ConfigReader& top) {
    Quantization out;
    auto q = top.child("quantization_config");
    if (!q) return out;
    auto method = q->get_string("quant_method");
    if (!method) q->fail("quant_method", "required field is missing (expected fp8, gptq, awq, mxfp4 or bitsandbytes)");
    if (*method == "fp8") {
        // DeepSeek-V3 style: e4m3 weights with one fp32 scale per
        // weight_block_size block (e.g. [128, 128]), or one per tensor.
        out.method = QuantMethod::Fp8;
        out.bits = 8;
        if (auto block = q->get_int_list("weight_block_size", 1, 1'000'000)) {
            if (block->size() != 2) q->fail("weight_block_size", "expected two integers [rows, cols], found " + std::to_string(block->size()));
            out.block_rows = (*block)[0];
            out.block_cols = (*block)[1];
        }
    } else if (*method == "gptq" || *method == "awq") {
        out.method = *method == "gptq" ? QuantMethod::Gptq : QuantMethod::Awq;
        out.bits = static_cast<int>(q->get_int({"bits", "w_bit"}, 2, 8).value_or(4));
        auto group = q->get_int({"group_size", "q_group_size"}, -1, 1'000'000).value_or(128);
        if (group == 0) q->fail("group_size", "expected a positive group size or -1 (per output row), found 0");
        out.group_size = group < 0 ? 0 : group;
    } else if (*method == "mxfp4") {
        // OCP MX FP4: 4-bit e2m1 values with one 8-bit e8m0 scale per 32.
        out.method = QuantMethod::Mxfp4;
        out.bits = 4;
    } else if (*method == "bitsandbytes") {
        out.method = QuantMethod::BitsAndBytes;
        bool four = q->get_bool("load_in_4bit").value_or(false);
        bool eight = q->get_bool("load_in_8bit").value_or(false);
        if (!four && !eight) q->fail("load_in_4bit", "bitsandbytes config sets neither load_in_4bit nor load_in_8bit");
        out.bits = four ? 4 : 8;
        out.double_quant = q->get_bool("bnb_4bit_use_double_quant").value_or(false);
    } else {
        q->fail("quant_method", "unsupported quantization \"" + *method + "\" (kvplan knows fp8, gptq, awq, mxfp4, bitsandbytes)");
    }
    keep_parts_from(*q, out);
    return out;
}

}  // namespace kvplan
