// Parameter counts and weight bytes against the exact published figures in
// ../shared/reference/param_counts.jsonl (each row's `source` quoted), and
// hand derivations where no exact count is published.
#include <catch2/catch.hpp>

#include "io/presets.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {
WeightSizing weights(const std::string& name) {
    return size_weights(preset(name));
}
}  // namespace

TEST_CASE("Llama-2-7B: 6,738,415,616 params and 13,476,831,232 fp16 bytes") {
    // param_counts.jsonl: keras-hub llama2_7b_en "params": 6738415616. The HF index total_size
    // 13,476,839,424 also holds 2,048 fp32 rotary inv_freq buffers; config-derived weights are
    // 6,738,415,616 x 2 = 13,476,831,232 bytes (the row's notes).
    auto w = weights("llama-2-7b");
    CHECK(w.params == 6'738'415'616);
    CHECK(w.bytes == 13'476'831'232);
}

TEST_CASE("Llama-3.1-8B: 8,030,261,248 params, 16,060,522,496 bf16 bytes") {
    // param_counts.jsonl: HF safetensors.total 8030261248; total_bytes 16060522496.
    auto w = weights("llama-3.1-8b");
    CHECK(w.params == 8'030'261'248);
    CHECK(w.bytes == 16'060'522'496);
}

TEST_CASE("Llama-3.1-70B: 70,553,706,496 params, 141,107,412,992 bytes") {
    auto w = weights("llama-3.1-70b");
    CHECK(w.params == 70'553'706'496);
    CHECK(w.bytes == 141'107'412'992);
}

TEST_CASE("Mixtral-8x7B: 46,702,792,704 params, 12,879,925,248 active") {
    // keras-hub mixtral_8_7b_en "params": 46702792704. Active (2 of 8 experts): the row's own formula
    // 46,702,792,704 - 6 x 3x4096x14336 x 32 = 46,702,792,704 - 33,822,867,456 = 12,879,925,248.
    // (The row also quotes 12,879,069,184 from a Go test; that figure does not follow from its formula.)
    auto w = weights("mixtral-8x7b");
    CHECK(w.params == 46'702'792'704);
    CHECK(w.bytes == 93'405'585'408);
    CHECK(w.active_params == 12'879'925'248);
}

TEST_CASE("Qwen2.5-7B: 7,615,616,512 params (q/k/v biases, untied head)") {
    auto w = weights("qwen2.5-7b");
    CHECK(w.params == 7'615'616'512);
    CHECK(w.bytes == 15'231'233'024);
}

TEST_CASE("Qwen3-8B: 8,190,735,360 params (q_norm/k_norm)") {
    CHECK(weights("qwen3-8b").params == 8'190'735'360);
}

TEST_CASE("Gemma-2-9B: 9,241,705,984 params (tied, 4 norms per layer), 18,483,411,968 bytes") {
    auto w = weights("gemma-2-9b");
    CHECK(w.params == 9'241'705'984);
    CHECK(w.bytes == 18'483'411'968);
}

TEST_CASE("Gemma-3-1B: 999,885,952 params") {
    CHECK(weights("gemma-3-1b").params == 999'885'952);
}

TEST_CASE("phi-4: 14,659,507,200 params") {
    CHECK(weights("phi-4").params == 14'659'507'200);
}

TEST_CASE("Falcon-7B: 6,921,720,704 unique params (the Hub's 7,217,189,760 counts the tied head twice)") {
    // Row notes: 7,217,189,760 - 65024 x 4544 = 6,921,720,704, equal to the config formula.
    CHECK(weights("falcon-7b").params == 6'921'720'704);
}

TEST_CASE("GPT-2: 124,439,808 params at the canonical vocab of 50,257") {
    // keras-hub gpt2_base_en "params": 124439808 (tied wte counted once, wpe, biases; no mask buffers).
    // The bundled config is a derivative with vocab 50,260: 3 more embedding rows x 768.
    CHECK(weights("gpt2").params == 124'439'808 + 3 * 768);
    auto m = from_json(R"({"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12,
                           "n_positions": 1024, "vocab_size": 50257, "torch_dtype": "float32"})");
    CHECK(size_weights(m).params == 124'439'808);
}

TEST_CASE("DeepSeek-V3: 671,026,419,200 main-model params, fp8 weights with 128x128 block scales") {
    // Row notes: "main weights 671,026,419,200; MTP weights 13,463,426,304 ... scales 41,540,496".
    // kvplan counts the main model; the MTP layer is noted, not counted.
    auto m = preset("deepseek-v3");
    auto w = size_weights(m);
    CHECK(w.params == 671'026'419'200);
    // Bytes by hand: fp8 linear weights of the main model
    //   61 x 187,105,280 (MLA) + 3 x 3 x 7168 x 18432 (dense) + 58 x 257 x 3 x 7168 x 2048 (routed + shared)
    //   = 669,065,609,216 x 1 B
    // + bf16 rest (embed, head, norms, router): 671,026,419,200 - 669,065,609,216 - 14,848 = 1,960,795,136 x 2 B
    // + fp32 block scales ceil(out/128) x ceil(in/128) per fp8 weight: 40,838,232 x 4 B
    // + fp32 e_score_correction_bias: 58 x 256 = 14,848 x 4 B
    CHECK(w.bytes == 673'150'611'808);
    CHECK(w.quantization == QuantMethod::Fp8);
    bool noted = false;
    for (const auto& n : m.notes) noted |= n.find("multi-token-prediction") != std::string::npos;
    CHECK(noted);
}

TEST_CASE("gpt-oss-120b: 116,829,156,672 params, 65,248,815,744 bytes with MXFP4 experts") {
    // keras-hub gpt_oss_120b_en "params": 116_829_156_672; tensor bytes 65,248,815,744 =
    // 2,167,371,072 x 2 (bf16 rest) + 114,661,785,600 / 2 (fp4 experts) + 3,583,180,800 (e8m0 scales, 1 per 32).
    auto w = weights("gpt-oss-120b");
    CHECK(w.params == 116'829'156'672);
    CHECK(w.bytes == 65'248'815'744);
}

TEST_CASE("Qwen2.5-0.5B and SmolLM2-135M: tied embeddings counted once") {
    // param_counts.jsonl: 494,032,768 and 134,515,008. Shapes from the published configs.
    auto qwen = from_json(R"({"model_type": "qwen2", "num_hidden_layers": 24, "hidden_size": 896,
        "num_attention_heads": 14, "num_key_value_heads": 2, "intermediate_size": 4864,
        "vocab_size": 151936, "tie_word_embeddings": true, "torch_dtype": "bfloat16"})");
    CHECK(size_weights(qwen).params == 494'032'768);
    auto smol = from_json(R"({"model_type": "llama", "num_hidden_layers": 30, "hidden_size": 576,
        "num_attention_heads": 9, "num_key_value_heads": 3, "intermediate_size": 1536,
        "vocab_size": 49152, "tie_word_embeddings": true, "torch_dtype": "bfloat16"})");
    CHECK(size_weights(smol).params == 134'515'008);
}

TEST_CASE("GPT-J-6B and Mamba-2.8B, derived by hand") {
    // GPT-J: wte 50400 x 4096 + 28 x (ln 2x4096 + q,k,v,o 4 x 4096^2 + fc_in 4096x16384 + 16384
    //        + fc_out 16384x4096 + 4096) + ln_f 2x4096 + lm_head 50400 x 4096 + 50400 bias
    //      = 206,438,400 + 28 x 201,355,264 + 8,192 + 206,488,800 = 6,050,882,784
    CHECK(weights("gpt-j-6b").params == 6'050'882'784);
    // Mamba-2.8B: embed 50280 x 2560 (tied) + 64 x (in_proj 2560x10240 + conv 5120x4 + 5120
    //   + x_proj 5120x192 + dt_proj 160x5120 + 5120 + A_log 5120x16 + D 5120 + out_proj 5120x2560 + norm 2560)
    //   + norm_f 2560 = 128,716,800 + 64 x 41,244,160 + 2,560 = 2,768,345,600 ("2.8B")
    CHECK(weights("mamba-2.8b").params == 2'768'345'600);
}

TEST_CASE("GPTQ 4-bit weights: packed values, fp16 scales and zeros per group of 128, g_idx") {
    // TheBloke/Llama-2-13B-chat-GPTQ: 13,015,864,320 params (Llama-2-13B). Per linear [out, in]:
    // out x in / 2 + out x in/128 x 2 (scales) + out x in/128 / 2 (zeros) + in x 4 (g_idx).
    auto m = fixture("configs/llama-gptq-4bit.json");
    auto w = size_weights(m);
    CHECK(w.params == 13'015'864'320);
    CHECK(w.quantization == QuantMethod::Gptq);
    // Linear weights per layer: q,k,v,o 5120x5120 and gate/up 13824x5120, down 5120x13824.
    auto linear = [](std::int64_t out, std::int64_t in) { return out * in / 2 + out * (in / 128) * 2 + out * (in / 128) / 2 + in * 4; };
    std::int64_t per_layer = 4 * linear(5120, 5120) + 2 * linear(13824, 5120) + linear(5120, 13824) + 2 * 5120 * 2;
    std::int64_t rest = 2LL * 32000 * 5120 * 2 + 5120 * 2;  // embed + lm_head + final norm, fp16
    CHECK(w.bytes == 40 * per_layer + rest);
}

TEST_CASE("MoE active parameters scale the routed experts by experts_per_token / experts") {
    // gpt-oss-120b: experts 36 x 128 x (2880x5760 + 5760 + 2880x2880 + 2880) = 114,701,598,720 params;
    // the rest 2,127,557,952. Active = rest + experts x 4/128 = 2,127,557,952 + 3,584,424,960 = 5,711,982,912.
    // OpenAI's "5.1 billion active" (keras-hub preset text) leaves out the 201088 x 2880 = 579,133,440
    // embedding table: 5,132,849,472.
    auto w = weights("gpt-oss-120b");
    CHECK(w.active_params == 5'711'982'912);
    CHECK((w.active_params - 579'133'440) / 1e9 == Approx(5.13).margin(0.005));
}

namespace {

// Llama-3.1-8B's config with a quantization_config added, as llm-compressor,
// ModelOpt or fbgemm write them.
WeightSizing llama8b_quantized(const std::string& quantization_config) {
    auto config = nlohmann::json::parse(find_preset("llama-3.1-8b")->config_text);
    config["quantization_config"] = nlohmann::json::parse(quantization_config);
    return size_weights(parse_model_config(config, "llama-3.1-8b-quantized"));
}

// Llama-3.1-8B by hand: linear weights per layer q 4096x4096, k and v 1024x4096, o 4096x4096,
// gate and up 14336x4096, down 4096x14336 = 218,103,808 params and 43,008 output rows;
// x 32 layers = 6,979,321,856 params, 1,376,256 rows. The rest (embeddings, head, norms)
// = 8,030,261,248 - 6,979,321,856 = 1,050,939,392 params, kept in bf16: 2,101,878,784 B.
constexpr std::int64_t kLinear = 6'979'321'856;
constexpr std::int64_t kRows = 1'376'256;
constexpr std::int64_t kRestBytes = 2'101'878'784;

}  // namespace

TEST_CASE("compressed-tensors W4A16: int4 values, a bf16 scale per 128 inputs, a weight_shape per tensor") {
    auto w = llama8b_quantized(R"({"quant_method": "compressed-tensors", "format": "pack-quantized",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int",
        "strategy": "group", "group_size": 128, "symmetric": true}}}, "ignore": ["lm_head"]})");
    // values kLinear / 2; scales kLinear / 128 x 2 B; 7 tensors x 32 layers x 16 B of weight_shape.
    CHECK(w.bytes == kRestBytes + kLinear / 2 + kLinear / 128 * 2 + 7 * 32 * 16);
    CHECK(w.quantization == QuantMethod::CompressedTensors);
}

TEST_CASE("compressed-tensors FP8 dynamic: fp8 values and a bf16 scale per output channel") {
    auto w = llama8b_quantized(R"({"quant_method": "compressed-tensors", "format": "float-quantized",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float",
        "strategy": "channel", "symmetric": true}}}, "ignore": ["lm_head"]})");
    CHECK(w.bytes == kRestBytes + kLinear + kRows * 2);
}

TEST_CASE("ModelOpt NVFP4: fp4 values, an fp8 scale per 16 inputs, an fp32 global scale per tensor") {
    auto w = llama8b_quantized(R"({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
        "exclude_modules": ["lm_head"]})");
    CHECK(w.bytes == kRestBytes + kLinear / 2 + kLinear / 16 + 7 * 32 * 4);
}

TEST_CASE("fbgemm FP8 and asymmetric AWQ") {
    auto fbgemm = llama8b_quantized(R"({"quant_method": "fbgemm_fp8"})");
    CHECK(fbgemm.bytes == kRestBytes + kLinear + kRows * 4);  // fp32 scale per row
    // AWQ 4-bit, group 128: values /2, fp16 scales and 4-bit zeros per group, no g_idx.
    auto awq = llama8b_quantized(R"({"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm"})");
    CHECK(awq.bytes == kRestBytes + kLinear / 2 + kLinear / 128 * 2 + kLinear / 128 / 2);
}

TEST_CASE("an exclusion of one projection does not unquantize its whole part") {
    auto all = llama8b_quantized(R"({"quant_method": "fbgemm_fp8"})");
    auto one = llama8b_quantized(R"({"quant_method": "fbgemm_fp8", "modules_to_not_convert": ["model.layers.0.self_attn.q_proj"]})");
    CHECK(one.bytes == all.bytes);
    auto attn = llama8b_quantized(R"({"quant_method": "fbgemm_fp8", "modules_to_not_convert": ["self_attn"]})");
    CHECK(attn.bytes > all.bytes);
}
