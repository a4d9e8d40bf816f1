// The bad-input catalogue: every way a user can hand kvplan a broken config
// or a wrong flag, run end to end through the real binary.
//
// The rule (docs/errors.md): bad input gets ONE line on stderr that starts
// "kvplan: error: " and names the file, the field and what was expected; the
// exit status is 2 for usage mistakes (flags, missing files, unknown presets)
// and 65 for bad data (malformed, inconsistent or unsupported config
// content); nothing at all is printed on stdout.
//
// Small broken configs live in tests/fixtures/bad/ so that each case can be
// reproduced by hand (`build/kvplan size --model tests/fixtures/bad/X.json`);
// big or odd ones (100 MB, deep nesting, folders) are generated into a
// scratch directory that is removed when the tests end.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <sys/wait.h>

#include "binary_run.hpp"

namespace {

using namespace kvplan::test;

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitData = 65;

std::string fixture(const std::string& name) {
    return (fs::path(KVPLAN_SOURCE_DIR) / "tests" / "fixtures" / "bad" / name).string();
}

std::size_t count_lines(const std::string& text) {
    std::size_t n = 0;
    for (char c : text) n += c == '\n';
    return n;
}

// The project rule for bad input: the exit code, nothing on stdout, one
// "kvplan: error: " line on stderr holding every expected fragment.
void expect_clean_error(const Run& r, int expected_exit, std::initializer_list<std::string> fragments) {
    INFO("command: " << r.command);
    INFO("stdout: [" << r.out << "]");
    INFO("stderr: [" << r.err << "]");
    CHECK(r.signal == 0);  // no crash (abort, segfault, ...)
    CHECK(r.exit_code == expected_exit);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("kvplan: error: ", 0) == 0);
    CHECK(count_lines(r.err) == 1);
    CHECK((!r.err.empty() && r.err.back() == '\n'));
    for (const std::string& fragment : fragments) {
        INFO("expected in stderr: " << fragment);
        CHECK(r.err.find(fragment) != std::string::npos);
    }
}

void expect_bad_config(const std::string& fixture_name, int expected_exit, std::initializer_list<std::string> fragments) {
    Run r = Run::kvplan({"size", "--model", fixture(fixture_name)});
    expect_clean_error(r, expected_exit, fragments);
    // The file's name must be in the message (checked separately for a clearer report).
    INFO("stderr: " << r.err);
    CHECK(r.err.find(fixture_name) != std::string::npos);
}

// A valid small llama config; `extra` is spliced in as more top-level members.
std::string llama_config(const std::string& extra = "") {
    return "{\n"
           "  \"architectures\": [\"LlamaForCausalLM\"],\n"
           "  \"model_type\": \"llama\",\n"
           "  \"hidden_size\": 4096,\n"
           "  \"intermediate_size\": 14336,\n"
           "  \"max_position_embeddings\": 8192,\n"
           "  \"num_attention_heads\": 32,\n"
           "  \"num_hidden_layers\": 32,\n"
           "  \"num_key_value_heads\": 8,\n"
           "  \"torch_dtype\": \"bfloat16\",\n" +
           (extra.empty() ? std::string() : "  " + extra + ",\n") +
           "  \"vocab_size\": 128256\n"
           "}\n";
}

const std::vector<std::string> kPresetExamples = {"llama-3.1-8b", "gemma-2-9b", "mamba-2.8b"};

}  // namespace

// ---------------------------------------------------------------------------
// Positive control: the harness itself sees a good run as good.

TEST_CASE("bad input harness: a valid config prints JSON on stdout and exits 0", "[bad-input][control]") {
    Run r = Run::kvplan({"size", "--model", fixture("valid_llama.json"), "--json"});
    INFO("command: " << r.command << "\nstderr: " << r.err);
    CHECK(r.signal == 0);
    CHECK(r.exit_code == kExitOk);
    CHECK(r.err.empty());
    REQUIRE_FALSE(r.out.empty());
    CHECK(r.out.front() == '{');
    CHECK(r.out.find("\"kv_bytes_per_token\": 131072") != std::string::npos);
}

TEST_CASE("bad input harness: a hand-built model prints a table and exits 0", "[bad-input][control]") {
    Run r = Run::kvplan({"size", "--layers", "32", "--kv-heads", "32", "--head-dim", "128", "--context", "2000"});
    INFO("command: " << r.command << "\nstderr: " << r.err);
    CHECK(r.exit_code == kExitOk);
    CHECK(r.err.empty());
    CHECK(r.out.find("KV per token") != std::string::npos);
}

// ---------------------------------------------------------------------------
// The file itself: missing, empty, not JSON, not an object, too big.

TEST_CASE("bad input: malformed JSON (trailing comma) exits 65 with line and column", "[bad-input][json]") {
    expect_bad_config("trailing_comma.json", kExitData, {"trailing_comma.json:4:1:", "not valid JSON"});
}

TEST_CASE("bad input: an empty file exits 65", "[bad-input][json]") {
    expect_bad_config("empty.json", kExitData, {"empty", "expected a JSON object"});
}

TEST_CASE("bad input: a whitespace-only file exits 65", "[bad-input][json]") {
    expect_bad_config("whitespace_only.json", kExitData, {"empty", "expected a JSON object"});
}

TEST_CASE("bad input: a top-level array instead of an object exits 65", "[bad-input][json]") {
    expect_bad_config("top_level_array.json", kExitData, {"top level", "expected a JSON object", "array"});
}

TEST_CASE("bad input: invalid UTF-8 inside a string exits 65 with line and column", "[bad-input][json]") {
    expect_bad_config("invalid_utf8.json", kExitData, {"invalid_utf8.json:3:", "not valid JSON", "UTF-8"});
}

TEST_CASE("bad input: a binary file named .json exits 65", "[bad-input][json]") {
    expect_bad_config("binary_garbage.json", kExitData, {"binary_garbage.json:1:1:", "not valid JSON"});
}

TEST_CASE("bad input: a NaN literal exits 65", "[bad-input][json]") {
    ScratchDir dir;
    fs::path file = dir.write("nan_layers.json", "{\"model_type\": \"llama\", \"num_hidden_layers\": NaN}\n");
    expect_clean_error(Run::kvplan({"size", "--model", file.string()}), kExitData, {"nan_layers.json:1:", "not valid JSON"});
}

TEST_CASE("bad input: a number too big for a double (1e400) exits 65 without crashing", "[bad-input][json]") {
    // nlohmann::json reports this as out_of_range, not parse_error.
    ScratchDir dir;
    std::string text = llama_config();
    text.replace(text.find("\"num_hidden_layers\": 32"), 23, "\"num_hidden_layers\": 1e400");
    fs::path file = dir.write("layers_1e400.json", text);
    expect_clean_error(Run::kvplan({"size", "--model", file.string()}), kExitData, {"layers_1e400.json"});
}

TEST_CASE("bad input: 100,000 levels of nested arrays exit 65 without crashing", "[bad-input][json]") {
    ScratchDir dir;
    const std::size_t depth = 100'000;
    fs::path file = dir.write("deep_nesting.json", "{\"a\": " + std::string(depth, '[') + std::string(depth, ']') + "}\n");
    expect_clean_error(Run::kvplan({"size", "--model", file.string()}), kExitData, {"deep_nesting.json"});
}

TEST_CASE("bad input: a 100 MB file is rejected by its size, quickly, exit 65", "[bad-input][json]") {
    ScratchDir dir;
    fs::path file = dir.path() / "huge_config.json";
    {
        // Valid JSON, so that only a size check (not a parse error) rejects it early.
        std::ofstream out(file, std::ios::binary);
        out << "{\"pad\": \"";
        const std::string chunk(1 << 20, 'x');
        for (int i = 0; i < 100; ++i) out << chunk;
        out << "\"}\n";
        REQUIRE(out.good());
    }
    Run r = Run::kvplan({"size", "--model", file.string()});
    expect_clean_error(r, kExitData, {"huge_config.json", "bytes"});
    CHECK(r.seconds < 3.0);
}

TEST_CASE("bad input: a folder with no config.json exits 2", "[bad-input][path]") {
    ScratchDir dir;
    dir.write("tokenizer.json", "{}\n");
    expect_clean_error(Run::kvplan({"size", "--model", dir.path().string()}), kExitUsage, {dir.path().filename().string(), "no config.json"});
}

TEST_CASE("bad input: a folder whose config.json is itself a folder exits 2", "[bad-input][path]") {
    ScratchDir dir;
    fs::create_directories(dir.path() / "config.json");
    expect_clean_error(Run::kvplan({"size", "--model", dir.path().string()}), kExitUsage, {"config.json", "not a regular file"});
}

TEST_CASE("bad input: a non-existent path exits 2 and lists the presets", "[bad-input][path]") {
    Run r = Run::kvplan({"size", "--model", "/nonexistent/kvplan/config.json"});
    expect_clean_error(r, kExitUsage, {"/nonexistent/kvplan/config.json", "no such file", "presets"});
    for (const auto& name : kPresetExamples) CHECK(r.err.find(name) != std::string::npos);
}

TEST_CASE("bad input: an unknown preset name exits 2 and lists the presets", "[bad-input][path]") {
    Run r = Run::kvplan({"size", "--model", "llama-9-9000b"});
    expect_clean_error(r, kExitUsage, {"llama-9-9000b", "presets"});
    for (const auto& name : kPresetExamples) CHECK(r.err.find(name) != std::string::npos);
}

// ---------------------------------------------------------------------------
// Config content: missing, mistyped, out of range, inconsistent, unsupported.

TEST_CASE("bad input: num_hidden_layers missing exits 65", "[bad-input][config]") {
    expect_bad_config("layers_missing.json", kExitData, {"num_hidden_layers", "missing"});
}

TEST_CASE("bad input: num_hidden_layers as a string exits 65", "[bad-input][config]") {
    expect_bad_config("layers_string.json", kExitData, {"num_hidden_layers", "expected an integer", "string"});
}

TEST_CASE("bad input: zero num_hidden_layers exits 65", "[bad-input][config]") {
    expect_bad_config("layers_zero.json", kExitData, {"num_hidden_layers", "expected an integer in [1,", "found 0"});
}

TEST_CASE("bad input: negative num_hidden_layers exits 65", "[bad-input][config]") {
    expect_bad_config("layers_negative.json", kExitData, {"num_hidden_layers", "expected an integer in [1,", "-4"});
}

TEST_CASE("bad input: huge num_hidden_layers written 1e12 exits 65", "[bad-input][config]") {
    expect_bad_config("layers_huge_float.json", kExitData, {"num_hidden_layers", "expected an integer in [1,"});
}

TEST_CASE("bad input: huge num_hidden_layers written 1000000000000 exits 65", "[bad-input][config]") {
    expect_bad_config("layers_huge_int.json", kExitData, {"num_hidden_layers", "expected an integer in [1,", "1000000000000"});
}

TEST_CASE("bad input: num_hidden_layers of 2^64-1 (unsigned) exits 65", "[bad-input][config]") {
    ScratchDir dir;
    std::string text = llama_config();
    text.replace(text.find("\"num_hidden_layers\": 32"), 23, "\"num_hidden_layers\": 18446744073709551615");
    fs::path file = dir.write("layers_uint64_max.json", text);
    expect_clean_error(Run::kvplan({"size", "--model", file.string()}), kExitData,
                       {"layers_uint64_max.json", "num_hidden_layers", "expected an integer in [1,"});
}

TEST_CASE("bad input: hidden_size with a fraction (4096.5) exits 65", "[bad-input][config]") {
    expect_bad_config("hidden_fraction.json", kExitData, {"hidden_size", "expected an integer", "4096.5"});
}

TEST_CASE("bad input: hidden_size not divisible by num_attention_heads and no head_dim exits 65", "[bad-input][config]") {
    ScratchDir dir;
    std::string text = llama_config();
    text.replace(text.find("\"hidden_size\": 4096"), 19, "\"hidden_size\": 4100");
    fs::path file = dir.write("hidden_not_divisible.json", text);
    expect_clean_error(Run::kvplan({"size", "--model", file.string()}), kExitData,
                       {"hidden_not_divisible.json", "hidden_size", "num_attention_heads", "head_dim"});
}

TEST_CASE("bad input: num_key_value_heads that does not divide num_attention_heads exits 65", "[bad-input][config]") {
    expect_bad_config("kv_heads_not_dividing.json", kExitData, {"num_key_value_heads", "num_attention_heads", "(5)", "(32)"});
}

TEST_CASE("bad input: zero num_key_value_heads exits 65", "[bad-input][config]") {
    expect_bad_config("kv_heads_zero.json", kExitData, {"num_key_value_heads", "found 0"});
}

TEST_CASE("bad input: num_experts_per_tok larger than num_local_experts exits 65", "[bad-input][config]") {
    ScratchDir dir;
    fs::path file = dir.write("topk_over_experts.json", llama_config("\"num_local_experts\": 8, \"num_experts_per_tok\": 9"));
    expect_clean_error(Run::kvplan({"size", "--model", file.string()}), kExitData, {"topk_over_experts.json", "num_experts_per_tok", "9"});
}

TEST_CASE("bad input: architectures as a string instead of a list exits 65", "[bad-input][config]") {
    ScratchDir dir;
    std::string text = llama_config();
    text.replace(text.find("[\"LlamaForCausalLM\"]"), 20, "\"LlamaForCausalLM\"");
    fs::path file = dir.write("architectures_string.json", text);
    expect_clean_error(Run::kvplan({"size", "--model", file.string()}), kExitData,
                       {"architectures_string.json", "architectures", "expected an array"});
}

TEST_CASE("bad input: layer_types of the wrong length exits 65", "[bad-input][config]") {
    expect_bad_config("layer_types_wrong_length.json", kExitData, {"layer_types", "3 entries", "4 layers"});
}

TEST_CASE("bad input: layer_types with an unknown entry exits 65", "[bad-input][config]") {
    expect_bad_config("layer_types_unknown.json", kExitData, {"layer_types[2]", "banana_attention"});
}

TEST_CASE("bad input: negative sliding_window on a mistral config exits 65", "[bad-input][config]") {
    expect_bad_config("mistral_negative_window.json", kExitData, {"sliding_window", "-4096"});
}

TEST_CASE("bad input: gemma2 with a null sliding_window exits 65", "[bad-input][config]") {
    expect_bad_config("gemma2_null_window.json", kExitData, {"sliding_window", "gemma2", "null"});
}

TEST_CASE("bad input: an unknown torch_dtype exits 65", "[bad-input][config]") {
    expect_bad_config("unknown_torch_dtype.json", kExitData, {"torch_dtype", "float13"});
}

TEST_CASE("bad input: an unknown quant_method exits 65", "[bad-input][config]") {
    expect_bad_config("unknown_quant_method.json", kExitData, {"quantization_config.quant_method", "magic4bit"});
}

TEST_CASE("bad input: compressed-tensors with two quantization groups exits 65", "[bad-input][config]") {
    expect_bad_config("compressed_tensors_two_groups.json", kExitData,
                      {"quantization_config.config_groups", "2 groups", "single quantization group"});
}

TEST_CASE("bad input: compressed-tensors with an unknown strategy exits 65", "[bad-input][config]") {
    expect_bad_config("compressed_tensors_bad_strategy.json", kExitData, {"quantization_config.config_groups.group_0.weights.strategy", "\"row\""});
}

TEST_CASE("bad input: text_config that is a string exits 65", "[bad-input][config]") {
    expect_bad_config("text_config_string.json", kExitData, {"text_config", "expected an object", "string"});
}

TEST_CASE("bad input: hybrid_override_pattern of the wrong length exits 65", "[bad-input][config]") {
    expect_bad_config("hybrid_pattern_wrong_length.json", kExitData, {"hybrid_override_pattern", "5 characters", "8 layers"});
}

TEST_CASE("bad input: hybrid_override_pattern with an unknown character exits 65", "[bad-input][config]") {
    expect_bad_config("hybrid_pattern_bad_char.json", kExitData, {"hybrid_override_pattern", "'X'", "layer 2"});
}

TEST_CASE("bad input: cross_attention_layers index out of range exits 65", "[bad-input][config]") {
    expect_bad_config("mllama_cross_layer_out_of_range.json", kExitData, {"text_config.cross_attention_layers", "below 40", "found 40"});
}

// Found by fuzzing the config path (libFuzzer, ASan+UBSan) and by hand: each
// once crashed or read what was not there; each message is quoted whole.
TEST_CASE("bad input: an OpenELM ffn_multiplier of 1e10 exits 65 instead of overflowing the MLP width", "[bad-input][config][fuzz]") {
    expect_bad_config("openelm_ffn_multiplier_huge.json", kExitData,
                      {"openelm_ffn_multiplier_huge.json: ffn_multipliers[2]: expected a positive multiple of model_dim up to 64, "
                       "found 10000000000.0"});
}

TEST_CASE("bad input: a negative OpenELM ffn_multiplier exits 65", "[bad-input][config][fuzz]") {
    expect_bad_config("openelm_ffn_multiplier_negative.json", kExitData,
                      {"openelm_ffn_multiplier_negative.json: ffn_multipliers[1]: expected a positive multiple of model_dim up to 64, found -2.0"});
}

TEST_CASE("bad input: OpenELM num_kv_heads null or missing exits 65", "[bad-input][config][fuzz]") {
    for (const char* name : {"openelm_num_kv_heads_null.json", "openelm_num_kv_heads_missing.json"})
        expect_bad_config(name, kExitData, {"num_kv_heads: required field is missing or null (expected an array of integers in [1, 100000])"});
}

TEST_CASE("bad input: a compressed-tensors config_groups entry that is null exits 65", "[bad-input][config][fuzz]") {
    expect_bad_config("compressed_tensors_null_group.json", kExitData,
                      {"quantization_config.config_groups.group_0: expected an object (the group's targets and weights scheme), found null"});
}

TEST_CASE("bad input: a Mamba config whose layer rule asks for attention exits 65 naming the rule", "[bad-input][config][fuzz]") {
    // Mamba, Mamba-2 and FalconMamba configs have no attention fields; these
    // used to divide by zero heads (SIGFPE).
    expect_bad_config("mamba_layer_types_attention.json", kExitData,
                      {"layer_types: makes layer 1 an attention layer, but a mamba config has no attention fields "
                       "(num_attention_heads, num_key_value_heads); its layers must all be Mamba"});
    expect_bad_config("mamba2_attn_layer_period.json", kExitData, {"attn_layer_period: makes layer 0 an attention layer, but a mamba2 config"});
    expect_bad_config("falcon_mamba_block_type_attention.json", kExitData,
                      {"layers_block_type: makes layer 2 an attention layer, but a falcon_mamba config"});
}

TEST_CASE("bad input: a baseline schema_version of 2^63 exits 65, never reaching the cast", "[bad-input][baseline][fuzz]") {
    // 9223372036854775808.0 is 2^63, exact as a double; (double)INT64_MAX
    // rounds up to it, so a range check against INT64_MAX let the float through
    // to an out-of-range conversion (undefined behaviour). As an integer,
    // 2^63 does not fit in int64 either; 9.2e18 fits and is just unknown.
    ScratchDir dir;
    const std::string rest =
        ", \"scenarios\": [{\"name\": \"a\", \"model\": \"llama-3.1-8b\", \"gpu\": \"h100-sxm\", "
        "\"context_tokens\": 4096, \"expected\": {}}]}\n";
    for (const std::string& version : {std::string("9223372036854775808.0"), std::string("9223372036854775808"), std::string("1e300")}) {
        fs::path file = dir.write("two63.json", "{\"schema_version\": " + version + rest);
        expect_clean_error(Run::kvplan({"check", "--baseline", file.string()}), kExitData,
                           {"two63.json: schema_version: expected an integer in [0, 9223372036854775807], found"});
    }
    fs::path file = dir.write("big.json", "{\"schema_version\": 9.2e18" + rest);
    expect_clean_error(Run::kvplan({"check", "--baseline", file.string()}), kExitData,
                       {"big.json: schema_version: unknown version 9200000000000000000"});
}

TEST_CASE("bad input: a config whose KV bytes overflow 64 bits exits 65 naming the file", "[bad-input][config][overflow]") {
    // Every field is inside its own limit; only the product (10,000 layers x
    // 100,000 KV heads x 2 x 100,000 head_dim x 2 bytes x 1e9 tokens) is absurd.
    // The numbers come from the file, so this is bad data (65), and the
    // message must say which file.
    ScratchDir dir;
    fs::path file = dir.write("overflow_kv.json",
                              "{\"model_type\": \"llama\", \"hidden_size\": 4096, \"intermediate_size\": 14336,\n"
                              " \"num_hidden_layers\": 10000, \"num_attention_heads\": 100000,\n"
                              " \"num_key_value_heads\": 100000, \"head_dim\": 100000,\n"
                              " \"max_position_embeddings\": 1000000000, \"vocab_size\": 32000}\n");
    expect_clean_error(Run::kvplan({"size", "--model", file.string()}), kExitData, {"overflow_kv.json", "overflow"});
}

// ---------------------------------------------------------------------------
// Flags.

TEST_CASE("bad input: --kv-dtype fp7 exits 2", "[bad-input][flags]") {
    expect_clean_error(Run::kvplan({"size", "--model", "llama-3.1-8b", "--kv-dtype", "fp7"}), kExitUsage, {"--kv-dtype", "fp7", "fp8"});
}

TEST_CASE("bad input: --mamba-cache-dtype fp8 exits 2 (vLLM keeps recurrent state in 16 or 32 bits)", "[bad-input][flags]") {
    expect_clean_error(Run::kvplan({"size", "--model", "mamba-2.8b", "--mamba-cache-dtype", "fp8"}), kExitUsage,
                       {"--mamba-cache-dtype", "fp8", "fp32, fp16 or bf16"});
}

TEST_CASE("bad input: a batch that overflows a config's per-sequence bytes exits 2, naming the flag's product", "[bad-input][flags][overflow]") {
    // Llama-3.1-70B at its default 131,072 tokens is 42,949,672,960 B per sequence; x 10,000,000 sequences
    // is 4.3e17 B, which fits; at --context 1e9 tokens x 1e7 it does not. The product comes from flags: exit 2.
    expect_clean_error(Run::kvplan({"size", "--model", "llama-3.1-70b", "--context", "1000000000", "--batch", "10000000"}), kExitUsage,
                       {"overflow", "batch"});
}

TEST_CASE("bad input: --context -5 exits 2", "[bad-input][flags]") {
    expect_clean_error(Run::kvplan({"size", "--model", "llama-3.1-8b", "--context", "-5"}), kExitUsage, {"--context", "-5"});
}

TEST_CASE("bad input: --context 0 exits 2", "[bad-input][flags]") {
    expect_clean_error(Run::kvplan({"size", "--model", "llama-3.1-8b", "--context", "0"}), kExitUsage, {"--context", "0"});
}

TEST_CASE("bad input: --context 1e20 exits 2", "[bad-input][flags]") {
    expect_clean_error(Run::kvplan({"size", "--model", "llama-3.1-8b", "--context", "1e20"}), kExitUsage, {"--context", "1e20"});
}

TEST_CASE("bad input: --context abc exits 2", "[bad-input][flags]") {
    expect_clean_error(Run::kvplan({"size", "--model", "llama-3.1-8b", "--context", "abc"}), kExitUsage, {"--context", "abc"});
}

TEST_CASE("bad input: --context with no value exits 2", "[bad-input][flags]") {
    expect_clean_error(Run::kvplan({"size", "--model", "llama-3.1-8b", "--context"}), kExitUsage, {"--context"});
}

TEST_CASE("bad input: --batch 0 exits 2", "[bad-input][flags]") {
    expect_clean_error(Run::kvplan({"size", "--model", "llama-3.1-8b", "--batch", "0"}), kExitUsage, {"--batch", "0"});
}

TEST_CASE("bad input: --tp 3 on llama-3.1-8b (32 heads) exits 2", "[bad-input][flags]") {
    expect_clean_error(Run::kvplan({"size", "--model", "llama-3.1-8b", "--tp", "3"}), kExitUsage, {"--tp 3", "32"});
}

TEST_CASE("bad input: --tp 0 exits 2", "[bad-input][flags]") {
    expect_clean_error(Run::kvplan({"size", "--model", "llama-3.1-8b", "--tp", "0"}), kExitUsage, {"--tp", "0"});
}

TEST_CASE("bad input: --format xml exits 2", "[bad-input][flags]") {
    expect_clean_error(Run::kvplan({"size", "--model", "llama-3.1-8b", "--format", "xml"}), kExitUsage, {"--format", "xml"});
}

TEST_CASE("bad input: --model together with --layers exits 2", "[bad-input][flags]") {
    expect_clean_error(Run::kvplan({"size", "--model", "llama-3.1-8b", "--layers", "32"}), kExitUsage, {"--model", "--layers"});
}

TEST_CASE("bad input: --layers without --kv-heads exits 2", "[bad-input][flags]") {
    expect_clean_error(Run::kvplan({"size", "--layers", "32", "--head-dim", "128"}), kExitUsage, {"--kv-heads"});
}

TEST_CASE("bad input: size with no model at all exits 2 and lists the presets", "[bad-input][flags]") {
    Run r = Run::kvplan({"size"});
    expect_clean_error(r, kExitUsage, {"--model", "presets"});
    for (const auto& name : kPresetExamples) CHECK(r.err.find(name) != std::string::npos);
}

TEST_CASE("bad input: a config without max_position_embeddings and no --context exits 2", "[bad-input][flags]") {
    ScratchDir dir;
    std::string text = llama_config();
    text.replace(text.find("\"max_position_embeddings\": 8192,"), 32, "");
    fs::path file = dir.write("no_max_positions.json", text);
    expect_clean_error(Run::kvplan({"size", "--model", file.string()}), kExitUsage,
                       {"no_max_positions.json", "max_position_embeddings", "--context"});
}

TEST_CASE("bad input: an unknown flag exits 2", "[bad-input][flags]") {
    expect_clean_error(Run::kvplan({"size", "--model", "llama-3.1-8b", "--frobnicate"}), kExitUsage, {"--frobnicate"});
}

TEST_CASE("bad input: an unknown subcommand exits 2", "[bad-input][flags]") {
    expect_clean_error(Run::kvplan({"frobnicate"}), kExitUsage, {"frobnicate"});
}

TEST_CASE("bad input: a misspelt command, or global flags without a command, exit 2 with one line on stderr", "[bad-input][flags]") {
    // `kvplan` alone prints the help (help_cmd_test.cpp).
    expect_clean_error(Run::kvplan({"simulat"}), kExitUsage, {"simulat"});
    expect_clean_error(Run::kvplan({"--gpu-file", std::string(KVPLAN_SOURCE_DIR) + "/models/gpus.json"}), kExitUsage, {"no command given"});
}

TEST_CASE("bad input: a hand-built shape whose KV bytes overflow 64 bits exits 2 with an overflow message", "[bad-input][flags][overflow]") {
    expect_clean_error(
        Run::kvplan({"size", "--layers", "10000", "--kv-heads", "100000", "--head-dim", "100000", "--context", "1000000000", "--batch", "10000000"}),
        kExitUsage, {"overflow"});
}

// --- concurrency: devices, sizes and parallelism flags ---

TEST_CASE("bad input: concurrency with an unknown GPU exits 2 and suggests ids", "[bad-input][concurrency]") {
    expect_clean_error(Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h1000"}), kExitUsage,
                       {"--gpu", "h1000", "h100", "kvplan gpus"});
}

TEST_CASE("bad input: concurrency without a device exits 2", "[bad-input][concurrency]") {
    expect_clean_error(Run::kvplan({"concurrency", "--model", "llama-3.1-8b"}), kExitUsage, {"--gpu", "--gpu-mem"});
}

TEST_CASE("bad input: concurrency with both --gpu and --gpu-mem exits 2", "[bad-input][concurrency]") {
    expect_clean_error(Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpu-mem", "80GB"}), kExitUsage,
                       {"--gpu", "--gpu-mem", "not both"});
}

TEST_CASE("bad input: concurrency sizes must carry a known unit and be positive", "[bad-input][concurrency]") {
    for (const char* size : {"-5", "80XB", "eighty", "0", "5000TiB"}) {
        INFO(size);
        expect_clean_error(Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu-mem", size}), kExitUsage, {"--gpu-mem"});
    }
    expect_clean_error(Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100", "--weights", "lots"}), kExitUsage,
                       {"--weights", "lots"});
    expect_clean_error(Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100", "--kv-pool", "-1GiB"}), kExitUsage,
                       {"--kv-pool", "negative"});
}

TEST_CASE("bad input: concurrency --mem-util outside 0 to 1 exits 2", "[bad-input][concurrency]") {
    expect_clean_error(Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100", "--mem-util", "1.5"}), kExitUsage, {"--mem-util"});
}

TEST_CASE("bad input: concurrency with a TP that cannot split the heads exits 2", "[bad-input][concurrency]") {
    expect_clean_error(Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100", "--tp", "3"}), kExitUsage,
                       {"--tp 3", "attention heads"});
}

TEST_CASE("bad input: concurrency with --gpus not a multiple of tp x pp exits 2", "[bad-input][concurrency]") {
    expect_clean_error(Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100", "--tp", "2", "--gpus", "3"}), kExitUsage,
                       {"--gpus 3", "multiple"});
}

TEST_CASE("bad input: concurrency with more pipeline stages than layers exits 2", "[bad-input][concurrency]") {
    expect_clean_error(Run::kvplan({"concurrency", "--model", "gpt2", "--gpu", "h100", "--pp", "13"}), kExitUsage, {"--pp 13", "layers"});
}

TEST_CASE("bad input: concurrency with an unknown engine or allocation exits 2", "[bad-input][concurrency]") {
    expect_clean_error(Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "ollama"}), kExitUsage,
                       {"--engine", "ollama"});
    expect_clean_error(Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100", "--allocation", "heap"}), kExitUsage,
                       {"--allocation"});
    expect_clean_error(Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm", "--allocation", "contiguous"}),
                       kExitUsage, {"contiguous", "--engine generic"});
    expect_clean_error(Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100", "--max-tokens", "4000"}), kExitUsage,
                       {"--max-tokens", "contiguous"});
}

TEST_CASE("bad input: concurrency with a malformed config exits 65 naming the file", "[bad-input][concurrency]") {
    ScratchDir dir;
    fs::path file = dir.write("broken.json", "{\"model_type\": \"llama\", \"num_hidden_layers\": -3}");
    expect_clean_error(Run::kvplan({"concurrency", "--model", file.string(), "--gpu", "h100"}), kExitData, {"broken.json", "num_hidden_layers"});
}

// --- roofline and recommend ---

TEST_CASE("bad input: roofline needs a database device, not --gpu-mem", "[bad-input][roofline]") {
    expect_clean_error(Run::kvplan({"roofline", "--model", "llama-3.1-8b", "--gpu-mem", "80GB"}), kExitUsage, {"--gpu ID", "--gpu-mem"});
}

TEST_CASE("bad input: roofline with an unknown weights format exits 2", "[bad-input][roofline]") {
    expect_clean_error(Run::kvplan({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100", "--weights-dtype", "q3_k"}), kExitUsage,
                       {"--weights-dtype", "q3_k", "q4_k_m"});
}

TEST_CASE("bad input: roofline efficiencies outside 0 to 1 exit 2", "[bad-input][roofline]") {
    expect_clean_error(Run::kvplan({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100", "--bw-efficiency", "1.7"}), kExitUsage,
                       {"--bw-efficiency"});
    expect_clean_error(Run::kvplan({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100", "--flops-efficiency", "0"}), kExitUsage,
                       {"--flops-efficiency"});
}

TEST_CASE("bad input: a broken calibration file exits 65 naming the file and field", "[bad-input][roofline]") {
    ScratchDir dir;
    fs::path missing = dir.write("cal_missing.json", R"({"schema_version": 1, "device": "x"})");
    expect_clean_error(Run::kvplan({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100", "--calibration", missing.string()}), kExitData,
                       {"cal_missing.json", "measured_bandwidth_bytes_per_s"});
    fs::path negative = dir.write("cal_negative.json", R"({"schema_version": 1, "measured_bandwidth_bytes_per_s": -1})");
    expect_clean_error(Run::kvplan({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100", "--calibration", negative.string()}), kExitData,
                       {"cal_negative.json", "measured_bandwidth_bytes_per_s"});
    fs::path garbage = dir.write("cal_garbage.json", "{not json");
    expect_clean_error(Run::kvplan({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100", "--calibration", garbage.string()}), kExitData,
                       {"cal_garbage.json"});
    expect_clean_error(Run::kvplan({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100", "--calibration", (dir.path() / "nope.json").string()}),
                       kExitUsage, {"nope.json"});
    // --plot names a folder for the charts; an existing file is refused before any work (docs/errors.md, "Writing files").
    const auto file = dir.path() / "report.txt";
    std::ofstream(file) << "x\n";
    expect_clean_error(Run::kvplan({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100", "--plot", file.string()}), kExitUsage,
                       {"--plot", "report.txt", "not a folder"});
    // --report FILE.html in a folder that does not exist, or that is a folder itself.
    expect_clean_error(Run::kvplan({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100", "--report", (dir.path() / "no" / "r.html").string()}),
                       kExitUsage, {"cannot write", "r.html"});
    expect_clean_error(Run::kvplan({"recommend", "--draws", "0", "--model", "llama-3.1-8b", "--slo", "ttft=2s,tpot=50ms", "--rate", "10", "--gpus", "h100",
                                    "--report", dir.path().string()}),
                       kExitUsage, {"cannot write", "it is a folder"});
}

TEST_CASE("bad input: recommend without its targets, or with a bad price, exits 2", "[bad-input][recommend]") {
    expect_clean_error(Run::kvplan({"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--tpot", "0.05"}), kExitUsage, {"--ttft"});
    expect_clean_error(Run::kvplan({"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "-1", "--tpot", "0.05"}), kExitUsage,
                       {"--ttft"});
    expect_clean_error(
        Run::kvplan({"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "1", "--tpot", "0.05", "--price-per-hour", "h100=cheap"}),
        kExitUsage, {"--price-per-hour", "h100-sxm", "cheap"});
    expect_clean_error(
        Run::kvplan({"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "1", "--tpot", "0.05", "--gpus", "h100,warp-drive"}),
        kExitUsage, {"--gpu", "warp-drive"});
    expect_clean_error(
        Run::kvplan({"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--prompt", "9000", "--ttft", "1", "--tpot", "0.05"}), kExitUsage,
        {"--prompt", "--context"});
}

TEST_CASE("bad input: the SLO search with a bad --slo or a --goodput outside 0 to 1 or a workload without --slo exits 2", "[bad-input][recommend]") {
    const std::initializer_list<std::string> base{"recommend", "--model", "llama-3.1-8b", "--gpus", "h100-sxm", "--rate", "5"};
    auto with = [&](std::initializer_list<std::string> more) {
        std::vector<std::string> args(base);
        args.insert(args.end(), more);
        return Run::kvplan(args);
    };
    expect_clean_error(with({"--slo", "ttft=2"}), kExitUsage, {"--slo", "ttft=2", "unit"});
    expect_clean_error(with({"--slo", "latency=2s"}), kExitUsage, {"--slo", "latency=2s", "ttft, tpot or e2e"});
    expect_clean_error(with({"--slo", "ttft=0s"}), kExitUsage, {"--slo", "positive"});
    expect_clean_error(with({"--slo", "ttft=2s", "--goodput", "0"}), kExitUsage, {"--goodput", "(0, 1]"});
    expect_clean_error(with({"--slo", "ttft=2s", "--goodput", "1.5"}), kExitUsage, {"--goodput", "(0, 1]"});
    expect_clean_error(with({}), kExitUsage, {"--slo", "targets"});
    expect_clean_error(Run::kvplan({"recommend", "--draws", "0", "--model", "llama-3.1-8b", "--slo", "ttft=2s"}), kExitUsage, {"--rate", "--trace"});
    expect_clean_error(with({"--slo", "ttft=2s", "--ttft", "1"}), kExitUsage, {"--ttft", "--analytic"});
    expect_clean_error(with({"--slo", "ttft=2s", "--analytic"}), kExitUsage, {"--analytic", "--slo"});
}

TEST_CASE("bad input: a shared prefix longer than the context exits 2", "[bad-input][concurrency]") {
    expect_clean_error(Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100", "--prefix-tokens", "5000", "--context", "4096"}),
                       kExitUsage, {"--prefix-tokens 5000", "--context"});
}

// ---------------------------------------------------------------------------
// Hostile flag values: NaN, infinities, empty list items, control characters.

TEST_CASE("bad input: NaN and infinities are refused by every real-valued flag, not read as the default", "[bad-input][flags]") {
    struct Case {
        std::vector<std::string> args;
        std::string expected;  // the flag and the value as the message quotes them
    };
    const std::vector<Case> cases = {
        {{"baseline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "4096", "--mem-util", "nan"},
         "--mem-util: expected a number in [0.01, 1], found \"nan\""},
        {{"diff", "--model", "llama-3.1-8b", "--model", "qwen3-8b", "--gpu", "h100-sxm", "--mem-util", "NaN"},
         "--mem-util: expected a number in [0.01, 1], found \"NaN\""},
        {{"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--mem-util", "nan"},
         "--mem-util: expected a number in [0.01, 1], found \"nan\""},
        {{"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--bw-efficiency", "nan"}, "--bw-efficiency: expected a number in [0.01, 1]"},
        {{"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--flops-efficiency", "inf"},
         "--flops-efficiency: expected a number in [0.01, 1], found \"inf\""},
        {{"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--step-overhead-ms", "nan"},
         "--step-overhead-ms: expected a number in [0, 1000]"},
        {{"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--price-per-hour", "-inf"},
         "--price-per-hour: expected a number in [0, 1e+06], found \"-inf\""},
        {{"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "nan", "--tpot", "0.05"},
         "--ttft: expected a number in [1e-06, 3600], found \"nan\""},
        {{"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "0.5", "--tpot", "0.05", "--price-per-hour", "h100-sxm=nan"},
         "--price-per-hour: expected a positive USD figure for h100-sxm, found \"nan\""},
    };
    for (const Case& c : cases) expect_clean_error(Run::kvplan(c.args), kExitUsage, {c.expected});
}

TEST_CASE("bad input: an empty item in a comma-separated list is refused, not skipped", "[bad-input][flags]") {
    expect_clean_error(Run::kvplan({"baseline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm,,l4", "--context", "4096"}), kExitUsage,
                       {"--gpu h100-sxm,,l4: an empty item in a comma-separated list"});
    expect_clean_error(Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "4096,"}), kExitUsage,
                       {"--context 4096,: an empty item"});
    expect_clean_error(Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--context=,4096"}), kExitUsage,
                       {"--context ,4096: an empty item"});
    expect_clean_error(
        Run::kvplan({"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "0.5", "--tpot", "0.05", "--gpus", "h100-sxm,,l4"}),
        kExitUsage, {"--gpus h100-sxm,,l4: an empty item"});
    expect_clean_error(Run::kvplan({"measure", "--device", "cpu", "--model", "llama-3.1-8b", "--batch", "1,,8"}), kExitUsage,
                       {"--batch 1,,8: an empty item"});
}

TEST_CASE("bad input: an unknown device is reported against the flag that named it", "[bad-input][flags]") {
    const std::vector<std::string> pd{"simulate",
                                      "--model",
                                      "llama-3.1-8b",
                                      "--gpu",
                                      "h100-sxm",
                                      "--prefill-replicas",
                                      "1",
                                      "--decode-replicas",
                                      "1",
                                      "--rate",
                                      "1",
                                      "--requests",
                                      "4",
                                      "--input-len",
                                      "fixed:100",
                                      "--output-len",
                                      "fixed:10"};
    std::vector<std::string> decode = pd, prefill = pd;
    decode.insert(decode.end(), {"--decode-gpu", "h1000"});
    prefill.insert(prefill.end(), {"--prefill-gpu", "h1000"});
    expect_clean_error(Run::kvplan(decode), kExitUsage, {"--decode-gpu: unknown device \"h1000\""});
    expect_clean_error(Run::kvplan(prefill), kExitUsage, {"--prefill-gpu: unknown device \"h1000\""});
    expect_clean_error(
        Run::kvplan({"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "0.5", "--tpot", "0.05", "--gpus", "h100-sxm,h1000"}),
        kExitUsage, {"--gpus: unknown device \"h1000\""});
    expect_clean_error(
        Run::kvplan({"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "0.5", "--tpot", "0.05", "--price-per-hour", "h1000=2"}),
        kExitUsage, {"--price-per-hour: unknown device \"h1000\""});
}

TEST_CASE("bad input: a newline or a terminal escape in a value is printed escaped, on one line", "[bad-input][flags]") {
    // A value with a newline would split the error in two (and a second line
    // starting "::" is a GitHub workflow command); ESC would recolour the terminal.
    expect_clean_error(Run::kvplan({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100\n::warning::x"}), kExitUsage,
                       {"unknown device \"h100\\n::warning::x\""});
    Run esc = Run::kvplan({"size", "--model", "llama\x1b[31m"});
    expect_clean_error(esc, kExitUsage, {"--model llama\\x1b[31m: no such file"});
    CHECK(esc.err.find('\x1b') == std::string::npos);
}

// ---------------------------------------------------------------------------
// Flags mean one thing.

TEST_CASE("bad input: --mem-util 0 is refused, not read as the engine's default", "[bad-input][flags]") {
    expect_clean_error(Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--mem-util", "0"}), kExitUsage,
                       {"--mem-util: expected a number in [0.01, 1], found \"0\""});
}

TEST_CASE("bad input: --json together with --format is refused", "[bad-input][flags]") {
    for (const char* command : {"size", "concurrency", "roofline"}) {
        std::vector<std::string> args = {command, "--model", "llama-3.1-8b", "--json", "--format", "csv"};
        if (std::string(command) != "size") args.insert(args.end(), {"--gpu", "h100-sxm"});
        expect_clean_error(Run::kvplan(args), kExitUsage, {"--json excludes --format"});
    }
}

TEST_CASE("bad input: a malformed token count is refused naming the flag", "[bad-input][flags]") {
    // vLLM's human_readable_int: decimals only with the decimal suffixes.
    expect_clean_error(Run::kvplan({"size", "--model", "llama-3.1-8b", "--context", "1.5K"}), kExitUsage,
                       {"--context: expected a token count such as 8192, 8k (8,000) or 8K (8,192), found \"1.5K\" "
                        "(decimals only with the decimal suffixes k, m, g, t)"});
    expect_clean_error(Run::kvplan({"size", "--model", "llama-3.1-8b", "--context", "8kk"}), kExitUsage, {"found \"8kk\""});
}

TEST_CASE("bad input: an hf_quant_config.json without its quantization object exits 65 naming the file", "[bad-input][config]") {
    ScratchDir dir;
    dir.write("m/config.json", llama_config());
    fs::path sidecar = dir.write("m/hf_quant_config.json", "{\"producer\": {\"name\": \"modelopt\"}}\n");
    expect_clean_error(Run::kvplan({"size", "--model", (dir.path() / "m").string()}), kExitData,
                       {sidecar.string() + ": quantization: expected an object"});
}

// --- concurrency: data-parallel attention and expert parallelism ---

TEST_CASE("bad input: concurrency --ep that does not divide the routed experts exits 2", "[bad-input][concurrency]") {
    // DeepSeek-V3 has 256 routed experts; SGLang --tp 6 --ep 6: 256 % 6 != 0 (the heads, 128, do not split by 6 either,
    // so attention TP 1 under --dp 6).
    expect_clean_error(
        Run::kvplan({"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "sglang", "--tp", "6", "--dp", "6", "--ep", "6"}),
        kExitUsage, {"EP 6", "256 routed experts"});
}

TEST_CASE("bad input: concurrency --ep on vLLM must equal tp x dp", "[bad-input][concurrency]") {
    expect_clean_error(
        Run::kvplan({"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "vllm", "--tp", "1", "--dp", "8", "--ep", "4"}),
        kExitUsage, {"--ep 4", "--tp x --dp = 8"});
}

TEST_CASE("bad input: concurrency --dp that does not divide SGLang's --tp exits 2", "[bad-input][concurrency]") {
    expect_clean_error(Run::kvplan({"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "sglang", "--tp", "8", "--dp", "3"}),
                       kExitUsage, {"--dp 3", "--tp 8"});
}

TEST_CASE("bad input: concurrency --ep on a dense model exits 2", "[bad-input][concurrency]") {
    expect_clean_error(
        Run::kvplan({"concurrency", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "vllm", "--tp", "2", "--enable-expert-parallel"}),
        kExitUsage, {"mixture-of-experts", "routed experts"});
}

TEST_CASE("bad input: concurrency engine flags of the other engine exit 2", "[bad-input][concurrency]") {
    expect_clean_error(
        Run::kvplan({"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "sglang", "--tp", "8", "--enable-expert-parallel"}),
        kExitUsage, {"--enable-expert-parallel", "vLLM"});
    expect_clean_error(
        Run::kvplan({"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "vllm", "--dp", "8", "--moe-a2a-backend", "deepep"}),
        kExitUsage, {"--moe-a2a-backend", "sglang"});
    expect_clean_error(Run::kvplan({"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "trtllm", "--tp", "8", "--dp", "4"}),
                       kExitUsage, {"--dp 4", "TensorRT-LLM", "pass --dp 8"});
    expect_clean_error(Run::kvplan({"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "trtllm", "--tp", "8", "--dp", "8",
                                    "--enable-expert-parallel"}),
                       kExitUsage, {"--enable-expert-parallel", "moe_expert_parallel_size"});
    expect_clean_error(Run::kvplan({"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "vllm-v0", "--dp", "8"}), kExitUsage,
                       {"--dp", "not modelled with data-parallel attention"});
}

TEST_CASE("bad input: concurrency --redundant-experts without expert parallelism exits 2", "[bad-input][concurrency]") {
    expect_clean_error(
        Run::kvplan({"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "vllm", "--tp", "8", "--redundant-experts", "32"}),
        kExitUsage, {"--redundant-experts", "expert parallelism"});
}

TEST_CASE("bad input: concurrency --gpus not a multiple of vLLM's tp x dp x pp exits 2", "[bad-input][concurrency]") {
    expect_clean_error(Run::kvplan({"concurrency", "--model", "deepseek-v3", "--gpu", "h200", "--engine", "vllm", "--tp", "1", "--dp", "8",
                                    "--enable-expert-parallel", "--gpus", "12"}),
                       kExitUsage, {"--gpus 12", "--tp x --dp x --pp = 8"});
}

// Memory that runs out is one line and exit 70, not SIGABRT from an
// uncaught std::bad_alloc. 100,000,000 blocks (the flag's ceiling) of
// llama-3.1-8b's pool cannot be indexed in 1 GiB of address space.
// AddressSanitizer reserves terabytes of shadow memory at start, so under
// `make sanitize` no address-space limit can be set: the case is skipped there.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KVPLAN_TEST_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define KVPLAN_TEST_UNDER_ASAN 1
#endif
TEST_CASE("bad input: a run that does not fit in memory exits 70 with one line", "[bad-input][memory]") {
#ifdef KVPLAN_TEST_UNDER_ASAN
    SUCCEED("skipped under AddressSanitizer (ulimit -v cannot hold its shadow memory)");
#else
    const Run r = Run::kvplan({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "1", "--requests", "5", "--input-len",
                               "fixed:100", "--output-len", "fixed:10", "--num-gpu-blocks", "100000000"},
                              1024 * 1024);
    expect_clean_error(r, 70, {"out of memory"});
#endif
}

// Class 1 of issue 44: a step or a transfer priced absurdly long used to
// count idle seconds from INT64_MIN (a hang) or print a TTFT of 10^10 s. The
// inputs that did it are now refused where they enter (class 3, the bounds
// table in core/bounds.hpp); the clock's horizon, 2 x 10^7 s, stays behind them.
TEST_CASE("bad input: a bandwidth that would take the clock past its horizon is refused where it enters", "[bad-input][horizon][bounds]") {
    ScratchDir dir;
    // An H100's figures but a memory bandwidth of 1 B/s: Llama-3.1-8B's 16 GB of weights would take 1.6 x 10^10 s a step.
    const fs::path slow = dir.write("slow_gpu.json",
                                    "{\"schema_version\": 1, \"gpus\": [{\"id\": \"slow-accel\", \"name\": \"Slow Accelerator\", "
                                    "\"aliases\": [], \"memory_bytes\": 85899345920, \"memory_bandwidth_bytes_per_s\": 1, "
                                    "\"memory_technology\": \"HBM3\", \"peak_tflops\": {\"bf16\": 989}}]}\n");
    const std::vector<std::string> sim = {"simulate", "--model",     "llama-3.1-8b", "--rate",       "1",       "--requests",
                                          "5",        "--input-len", "fixed:100",    "--output-len", "fixed:10"};
    const auto with = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = sim;
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    };
    expect_clean_error(Run::kvplan(with({"--gpu-file", slow.string(), "--gpu", "slow-accel"})), kExitData,
                       {"slow_gpu.json", "memory_bandwidth_bytes_per_s", "[1e9, 1e14] bytes/s", "found 1"});
    expect_clean_error(Run::kvplan(with({"--engine", "sglang", "--gpu-file", slow.string(), "--gpu", "slow-accel"})), kExitData,
                       {"memory_bandwidth_bytes_per_s"});
    // A KV link of 1e-300 GB/s: the pull of a prompt's KV would end at ~10^298 s.
    expect_clean_error(Run::kvplan(with({"--gpu", "h100-sxm", "--prefill-replicas", "1", "--decode-replicas", "1", "--kv-link", "1e-300GB/s"})),
                       kExitUsage, {"--kv-link 1e-300GB/s", "link bandwidth in [1e8, 1e13]"});
}

// Class 3 of issue 44: numbers in "> 0" but absurd. Every physical quantity
// has a floor and a ceiling in one table (core/bounds.hpp, docs/errors.md).
TEST_CASE("bad input: a device, engine or calibration figure outside its plausible bounds exits 65 naming the field", "[bad-input][bounds]") {
    ScratchDir dir;
    const std::string device_head =
        "{\"schema_version\": 1, \"gpus\": [{\"id\": \"odd\", \"memory_bytes\": 85899345920, "
        "\"memory_bandwidth_bytes_per_s\": 3350000000000, \"memory_technology\": \"HBM3\", ";
    // The issue's TFLOP/s of 5e-324 (the smallest double).
    const fs::path tiny = dir.write("tiny_tflops.json", device_head + "\"peak_tflops\": {\"bf16\": 5e-324}}]}");
    expect_clean_error(Run::kvplan({"roofline", "--gpu-file", tiny.string(), "--gpu", "odd", "--model", "llama-3.1-8b"}), kExitData,
                       {"tiny_tflops.json", "peak_tflops.bf16", "[0.01, 100000] TFLOP/s"});
    // Mine: an NVLink of 1 PB/s per direction, a thousand times NVLink 5.
    const fs::path link = dir.write("fast_link.json", device_head + "\"interconnect_bytes_per_s_per_direction\": 1e15}]}");
    expect_clean_error(Run::kvplan({"roofline", "--gpu-file", link.string(), "--gpu", "odd", "--model", "llama-3.1-8b"}), kExitData,
                       {"fast_link.json", "interconnect_bytes_per_s_per_direction", "link bandwidth"});
    // The issue's efficiency of 1e-300, in an engine profile.
    const fs::path engine = dir.write("slow_engine.json", R"({"schema_version": 1, "id": "slow", "kv_fraction": 1e-300})");
    expect_clean_error(
        Run::kvplan({"roofline", "--engine-file", engine.string(), "--engine", "slow", "--gpu", "h100-sxm", "--model", "llama-3.1-8b"}), kExitData,
        {"slow_engine.json", "kv_fraction", "[0.01, 1]"});
    // A calibration measuring 1 B/s.
    const fs::path cal = dir.write("slow_cal.json", R"({"schema_version": 2, "measured_bandwidth_bytes_per_s": 1})");
    expect_clean_error(Run::kvplan({"roofline", "--calibration", cal.string(), "--gpu", "h100-sxm", "--model", "llama-3.1-8b"}), kExitData,
                       {"slow_cal.json", "measured_bandwidth_bytes_per_s", "[1e8, 1e14] bytes/s"});
    // Mine: a calibration's FLOP/s key misspelt was ignored while the output said FLOP/s were measured.
    const fs::path typo =
        dir.write("typo_cal.json", R"({"schema_version": 2, "measured_bandwidth_bytes_per_s": 3e12, "measured_flops_per_s": 7e14})");
    expect_clean_error(Run::kvplan({"roofline", "--calibration", typo.string(), "--gpu", "h100-sxm", "--model", "llama-3.1-8b"}), kExitData,
                       {"typo_cal.json", "measured_flops_per_s", "unknown key", "measured_flop_per_s"});
}

TEST_CASE("bad input: a flag outside its plausible bounds exits 2 naming the flag", "[bad-input][bounds]") {
    // The issue's imbalance above the EP size: all routed tokens on one rank is EP x the mean (EP 8 here).
    expect_clean_error(
        Run::kvplan({"roofline", "--model", "deepseek-v3", "--gpu", "h200", "--dp", "8", "--enable-expert-parallel", "--expert-imbalance", "9"}),
        kExitUsage, {"--expert-imbalance", "at most the EP size 8", "found 9"});
    // The issue's shared prefix longer than every prompt.
    expect_clean_error(Run::kvplan({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "1", "--requests", "5", "--input-len",
                                    "fixed:100", "--output-len", "fixed:10", "--prefix-tokens", "101"}),
                       kExitUsage, {"--prefix-tokens", "at most the longest prompt, 100 tokens", "found 101"});
    // Mine: an efficiency flag of 0.001 names the table's reason.
    expect_clean_error(Run::kvplan({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--bw-efficiency", "0.001"}), kExitUsage,
                       {"--bw-efficiency", "[0.01, 1]", "efficiency fraction"});
}

// Outputs that would overwrite inputs, and silent defaults: each refused with one line.
TEST_CASE("bad input: an empty flag value exits 2 instead of running as if the flag were absent", "[bad-input][defaults]") {
    const std::vector<std::string> sim = {"simulate",   "--model", "llama-3.1-8b", "--gpu",    "h100-sxm",     "--rate", "1",
                                          "--requests", "3",       "--input-len",  "fixed:10", "--output-len", "fixed:5"};
    for (const std::string flag : {"--slo", "--plot", "--requests-csv"}) {
        std::vector<std::string> args = sim;
        args.insert(args.end(), {flag, ""});
        expect_clean_error(Run::kvplan(args), kExitUsage, {flag + ": an empty value"});
    }
    expect_clean_error(Run::kvplan({"baseline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "4096", "--output", ""}), kExitUsage,
                       {"--output: an empty value"});
}

TEST_CASE("bad input: a --seed CLI11 would clamp to 2^64 - 1 exits 2", "[bad-input][defaults]") {
    const std::vector<std::string> sim = {"simulate",   "--model", "llama-3.1-8b", "--gpu",    "h100-sxm",     "--rate",  "1",
                                          "--requests", "3",       "--input-len",  "fixed:10", "--output-len", "fixed:5", "--seed"};
    for (const std::string seed : {"-1", "18446744073709551616", "99999999999999999999999", "7x"}) {
        std::vector<std::string> args = sim;
        args.push_back(seed);
        expect_clean_error(Run::kvplan(args), kExitUsage, {"--seed", "whole number from 0 to 18446744073709551615", seed});
    }
    std::vector<std::string> top = sim;
    top.push_back("18446744073709551615");  // 2^64 - 1 itself is a seed
    CHECK(Run::kvplan(top).exit_code == kExitOk);
    expect_clean_error(Run::kvplan({"recommend", "--draws", "0", "--model", "llama-3.1-8b", "--gpus", "h100-sxm", "--slo", "ttft=2s", "--rate", "1", "--seed", "-1"}),
                       kExitUsage, {"--seed"});
}

TEST_CASE("bad input: an output file that is one of the command's inputs exits 2 and leaves the input as it was", "[bad-input][defaults]") {
    ScratchDir dir;
    const std::string trace_text = "arrival_s,input_tokens,output_tokens\n0,10,5\n";
    const fs::path trace = dir.write("t.csv", trace_text);
    expect_clean_error(
        Run::kvplan({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", trace.string(), "--requests-csv", trace.string()}),
        kExitUsage, {"--requests-csv", "is the file --trace reads"});
    // The same file by another spelling of its path.
    expect_clean_error(Run::kvplan({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", trace.string(), "--timeseries-csv",
                                    (dir.path() / "." / "t.csv").string()}),
                       kExitUsage, {"--timeseries-csv", "is the file --trace reads"});
    CHECK(read_file(trace) == trace_text);
    // A model folder's config.json as --report.
    const std::string config_text = read_file(fs::path(KVPLAN_SOURCE_DIR) / "models/presets/llama-3.1-8b.json");
    const fs::path config = dir.write("model/config.json", config_text);
    expect_clean_error(Run::kvplan({"roofline", "--model", config.parent_path().string(), "--gpu", "h100", "--report", config.string()}), kExitUsage,
                       {"--report", "is the file --model reads"});
    CHECK(read_file(config) == config_text);
    // check --update --output F where F is the baseline: the report would replace it.
    const fs::path baseline = dir.path() / "b.json";
    REQUIRE(Run::kvplan({"baseline", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--context", "4096", "--output", baseline.string()}).exit_code ==
            kExitOk);
    const std::string baseline_text = read_file(baseline);
    expect_clean_error(Run::kvplan({"check", "--baseline", baseline.string(), "--update", "--output", baseline.string()}), kExitUsage,
                       {"--output", "is the file --baseline reads"});
    CHECK(read_file(baseline) == baseline_text);
}

TEST_CASE("bad input: a key given twice in kvplan's own files exits 65, a config keeps Python's last-wins", "[bad-input][defaults]") {
    ScratchDir dir;
    const fs::path prices = dir.write("prices.json", R"({"usd_per_gpu_hour": {"h100-sxm": 2.0, "h100-sxm": 3.0}})");
    expect_clean_error(Run::kvplan({"recommend", "--model", "llama-3.1-8b", "--context", "8192", "--ttft", "0.5", "--tpot", "0.05", "--price-file",
                                    prices.string()}),
                       kExitData, {"prices.json", "h100-sxm: a key given twice"});
    const fs::path gpus = dir.write("gpus.json", R"({"schema_version": 1, "schema_version": 1, "gpus": []})");
    expect_clean_error(Run::kvplan({"gpus", "--gpu-file", gpus.string()}), kExitData, {"gpus.json", "schema_version: a key given twice"});
    const fs::path cal =
        dir.write("cal.json", R"({"schema_version": 1, "measured_bandwidth_bytes_per_s": 1e12, "measured_bandwidth_bytes_per_s": 2e12})");
    expect_clean_error(Run::kvplan({"roofline", "--model", "llama-3.1-8b", "--gpu", "h100", "--calibration", cal.string()}), kExitData,
                       {"cal.json", "measured_bandwidth_bytes_per_s: a key given twice"});
    // A config with a repeated key loads as transformers reads it (json.load keeps the last).
    const fs::path config = dir.write("dup/config.json", R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 2,
        "num_attention_heads": 32, "num_key_value_heads": 8, "num_key_value_heads": 4, "intermediate_size": 14336, "vocab_size": 128256,
        "max_position_embeddings": 8192})");
    const Run ok = Run::kvplan({"size", "--model", config.string(), "--context", "1", "--json"});
    REQUIRE(ok.exit_code == kExitOk);
    // 2 layers x 4 KV heads x 128 dims x 2 (K and V) x 2 bytes = 4,096 B a token (8 heads would give 8,192).
    CHECK(ok.out.find("\"kv_bytes_per_token\": 4096") != std::string::npos);
}

TEST_CASE("bad input: a trace line with two names for one count, or a day its month lacks, exits 65", "[bad-input][trace]") {
    ScratchDir dir;
    const fs::path both = dir.write("both.jsonl", R"({"arrival_time": 0, "input_toks": 10, "input_tokens": 12, "output_tokens": 5})"
                                                  "\n");
    expect_clean_error(Run::kvplan({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", both.string()}), kExitData,
                       {"both.jsonl:1", "input_tokens: given beside input_toks"});
    const fs::path feb = dir.write("feb.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-02-31 00:00:00.0,10,5\n");
    expect_clean_error(Run::kvplan({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", feb.string()}), kExitData,
                       {"feb.csv:2", "TIMESTAMP", "2023-2 has 28 days"});
    const fs::path apr = dir.write("apr.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-04-31 00:00:00.0,10,5\n");
    expect_clean_error(Run::kvplan({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", apr.string()}), kExitData,
                       {"apr.csv:2", "2023-4 has 30 days"});
    // 2024 is a leap year: February 29 is a day.
    const fs::path leap = dir.write("leap.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-02-29 00:00:00.0,10,5\n");
    CHECK(Run::kvplan({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", leap.string()}).exit_code == kExitOk);
    // A field of 60,000 bytes is quoted in at most 40.
    const fs::path huge = dir.write("huge.csv", "arrival_s,input_tokens,output_tokens\n0," + std::string(60'000, '7') + "x,5\n");
    const Run r = Run::kvplan({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", huge.string()});
    expect_clean_error(r, kExitData, {"huge.csv:2", "..."});
    CHECK(r.err.size() < 300);
}

TEST_CASE("bad input: a trace line too long or nested too deep is refused before it is read whole", "[bad-input][trace][memory]") {
    // Before: a 100 MB line of nested brackets took about 7.5 GB to parse, and
    // a 1 GB field became a 1 GB error line. Lines are capped at 65,536 bytes
    // (a Mooncake line for a 128k-token prompt is about 2.6 KB) and JSON
    // lines at 4 levels (a flat object with one list).
    ScratchDir dir;
    const std::string header = "arrival_s,input_tokens,output_tokens\n";
    const fs::path long_line = dir.write("long.csv", header + "0,10,5\n0," + std::string(200'000, '7') + ",5\n");
    Run r = Run::kvplan({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", long_line.string()});
    expect_clean_error(r, kExitData, {"long.csv:3", "a line longer than 65536 bytes"});
    CHECK(r.err.size() < 200);
    // 10 MB of '[' on one JSON line: refused at the line cap, in well under 1 GB.
    const fs::path brackets = dir.write("brackets.jsonl", std::string(10'000'000, '[') + "\n");
#ifdef KVPLAN_TEST_UNDER_ASAN
    const long address_space_kib = 0;  // no limit under AddressSanitizer (see above)
#else
    const long address_space_kib = 1L << 20;  // 1 GiB
#endif
    r = Run::kvplan({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", brackets.string(), "--trace-format", "jsonl"},
                    address_space_kib);
    expect_clean_error(r, kExitData, {"brackets.jsonl:1", "a line longer than"});
    // Within the cap, nesting is refused as the parser meets it.
    const fs::path nested = dir.write("nested.jsonl", R"({"arrival_time": 0, "input_tokens": 10, "output_tokens": 5, "x": [[[[[1]]]]]})"
                                                      "\n");
    expect_clean_error(Run::kvplan({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", nested.string()}), kExitData,
                       {"nested.jsonl:1", "nested deeper than 4 levels"});
    // The last line may end without a newline, and a line of exactly the cap is read.
    const fs::path no_newline = dir.write("last.csv", header + "0,10,5\n1,20,5");
    CHECK(Run::kvplan({"simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--trace", no_newline.string()}).exit_code == kExitOk);
}

TEST_CASE("bad input: simulate on a device without FLOP/s exits 2 instead of pricing prefill as free", "[bad-input][defaults]") {
    // Before: a 2,048-token prefill of llama-3.1-8b was priced by its memory traffic alone.
    ScratchDir dir;
    const fs::path gpus = dir.write("nof.json", R"({"schema_version": 1, "gpus": [{"id": "our-accel", "name": "Our Accelerator 48GB",
        "memory_bytes": 51539607552, "memory_bandwidth_bytes_per_s": 1000000000000, "memory_technology": "GDDR6", "peak_tflops": {}}]})");
    expect_clean_error(Run::kvplan({"simulate", "--gpu-file", gpus.string(), "--model", "llama-3.1-8b", "--gpu", "our-accel", "--rate", "1",
                                    "--requests", "3", "--input-len", "fixed:2048", "--output-len", "fixed:5"}),
                       kExitUsage, {"our-accel", "no FLOP/s figure for bf16", "peak_tflops"});
    expect_clean_error(
        Run::kvplan({"simulate", "--gpu-file", gpus.string(), "--model", "llama-3.1-8b", "--gpu", "our-accel", "--prefill-replicas", "1",
                     "--decode-replicas", "1", "--rate", "1", "--requests", "3", "--input-len", "fixed:2048", "--output-len", "fixed:5"}),
        kExitUsage, {"no FLOP/s figure"});
}

// ---------------------------------------------------------------------------
// Served runs (simulate --trace RUN --compare, docs/compare.md).

TEST_CASE("bad input: a served run's negative TTFT or out-of-order timestamps exit 65 naming the file and the field", "[bad-input][served]") {
    // served_negative_ttft.json: vllm bench serve's fields, the second request's ttfts entry -0.1.
    expect_clean_error(
        Run::kvplan({"simulate", "--model", "llama-3.1-8b", "--gpu", "rtx-3090", "--trace", fixture("served_negative_ttft.json"), "--compare"}),
        kExitData, {"served_negative_ttft.json: ttfts[1]: -0.1 s: expected 0 to 10^7 s"});
    // served_timestamps_order.jsonl: line 2's first token (50.55) before its scheduling (50.6).
    expect_clean_error(
        Run::kvplan({"simulate", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--trace", fixture("served_timestamps_order.jsonl"), "--compare"}),
        kExitData, {"served_timestamps_order.jsonl:2: first_token_ts: before scheduled_ts"});
}
