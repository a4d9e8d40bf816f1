// --model file.gguf: the GGUF header (llama.cpp's model file) read into the
// same ModelSpec a config.json gives, with the stored weight bytes from the
// tensor infos and llama.cpp's f16 KV cache. The files are written by
// tests/gguf_writer.hpp: a real header, the tensor data a hole.
#include "io/gguf_reader.hpp"

#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "binary_run.hpp"
#include "core/error.hpp"
#include "gguf_writer.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

// Llama-3.1-8B in llama.cpp's Q4_K_M, by hand from ggml's block sizes
// (Q4_K 144 B per 256 values, Q6_K 210 B per 256, F32 4 B per value):
//   per layer, always Q4_K:
//     attn_q      4096 x 4096   16,777,216 / 256 x 144 =  9,437,184
//     attn_k      4096 x 1024    4,194,304 / 256 x 144 =  2,359,296
//     attn_output 4096 x 4096                             9,437,184
//     ffn_gate    4096 x 14336  58,720,256 / 256 x 144 = 33,030,144
//     ffn_up      4096 x 14336                           33,030,144
//     2 norms     2 x 4096 x 4                               32,768
//                                                        87,326,720  x 32 = 2,794,455,040
//   attn_v + ffn_down, Q6_K in the 16 use_more_bits layers:
//     4,194,304 / 256 x 210 + 58,720,256 / 256 x 210 = 3,440,640 + 48,168,960
//                                                      = 51,609,600  x 16 =   825,753,600
//   attn_v + ffn_down, Q4_K in the other 16: 2,359,296 + 33,030,144
//                                                      = 35,389,440  x 16 =   566,231,040
//   token_embd  4096 x 128256 Q4_K: 525,336,576 / 256 x 144            =   295,501,824
//   output      4096 x 128256 Q6_K: 525,336,576 / 256 x 210            =   430,940,160
//   output_norm 4096 F32                                               =        16,384
//   rope_freqs  64 F32 (Llama-3.1's RoPE scaling table)                =           256
//                                                                total = 4,912,898,304 B
// Published Llama-3.1-8B-Instruct Q4_K_M files (bartowski's, lmstudio-community's)
// are listed at 4.92 GB: these tensors plus the header's ~8 MB of tokenizer.
constexpr std::int64_t kQ4KMBytes = 4'912'898'304;
// Parameters: transformers' count for Llama-3.1-8B; rope_freqs is not one.
constexpr std::int64_t kLlama8BParams = 8'030'261'248;

GgufHeader header_of(const GgufWriter& w) {
    const std::string bytes = w.header();
    std::istringstream in(bytes);
    return read_gguf_header(in, bytes.size() + w.data_bytes(), "test.gguf");
}

ModelSpec model_of(const GgufWriter& w) {
    return gguf_model(header_of(w), "test.gguf");
}

const fs::path& llama_file() {
    static const fs::path file = llama31_8b_q4_k_m().write(scratch().path() / "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf");
    return file;
}

nlohmann::json size_json(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"size", "--model", llama_file().string(), "--context", "8192", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Run r = Run::kvplan(args);
    INFO(r.command << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out);
}

std::size_t count_lines(const std::string& text) {
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// The bad-input rule (docs/errors.md): the exit code, nothing on stdout, one
// "kvplan: error:" line naming the file and every fragment.
void expect_error(const fs::path& file, int exit_code, std::initializer_list<std::string> fragments) {
    const Run r = Run::kvplan({"size", "--model", file.string()});
    INFO(r.command << "\nstdout: [" << r.out << "]\nstderr: [" << r.err << "]");
    CHECK(r.signal == 0);
    CHECK(r.exit_code == exit_code);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("kvplan: error: " + file.string() + ":", 0) == 0);
    CHECK(count_lines(r.err) == 1);
    for (const std::string& f : fragments) CHECK_THAT(r.err, Catch::Contains(f));
}

// The smallest valid header of an architecture, for the family rules
// (kv_heads 0: no head_count_kv key).
GgufWriter family(const std::string& arch, std::uint32_t layers, std::uint32_t hidden, std::uint32_t heads, std::uint32_t kv_heads) {
    GgufWriter w;
    w.kv_str("general.architecture", arch);
    w.kv_u32(arch + ".block_count", layers);
    w.kv_u32(arch + ".embedding_length", hidden);
    w.kv_u32(arch + ".attention.head_count", heads);
    if (kv_heads > 0) w.kv_u32(arch + ".attention.head_count_kv", kv_heads);
    w.kv_u32(arch + ".context_length", 32768);
    w.kv_u32(arch + ".feed_forward_length", hidden * 4);
    w.kv_u32(arch + ".vocab_size", 32000);
    w.tensor("token_embd.weight", {hidden, 32000}, kQ8_0);
    return w;
}

}  // namespace

TEST_CASE("a Llama-3.1-8B Q4_K_M GGUF sizes to its exact stored bytes and 8,030,261,248 parameters") {
    const nlohmann::json j = size_json();
    CHECK(j["weights_bytes"] == kQ4KMBytes);
    CHECK(j["params"] == kLlama8BParams);
    // The published file's 4.92 GB holds these bytes plus its header.
    CHECK(j["weights_bytes"].get<std::int64_t>() > 4'850'000'000);
    CHECK(j["weights_bytes"].get<std::int64_t>() < 4'920'000'000);
    // llama.cpp's default cache: f16, 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B.
    CHECK(j["kv_dtype"] == "fp16");
    CHECK(j["kv_bytes_per_token"] == 131'072);
    CHECK(j["kv_bytes_per_sequence"] == 131'072LL * 8192);
    const std::string notes = j["notes"].dump();
    CHECK_THAT(notes, Catch::Contains("GGUF v3 header"));
    CHECK_THAT(notes, Catch::Contains("general.file_type 15, MOSTLY_Q4_K_M"));
    CHECK_THAT(notes, Catch::Contains("llama.cpp's default f16"));
}

TEST_CASE("a GGUF model's KV cache follows --kv-dtype, and llama.cpp's q8_0 cache type is not a kvplan dtype") {
    CHECK(size_json({"--kv-dtype", "fp8"})["kv_bytes_per_token"] == 65'536);
    CHECK(size_json({"--kv-dtype", "int8"})["kv_bytes_per_token"] == 65'536);
    CHECK(size_json({"--kv-dtype", "bf16"})["kv_bytes_per_token"] == 131'072);
    CHECK(size_json({"--kv-dtype", "auto"})["kv_dtype"] == "fp16");
    const Run r = Run::kvplan({"size", "--model", llama_file().string(), "--kv-dtype", "q8_0"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("--kv-dtype"));
}

TEST_CASE("the GGUF tensor infos give the stored bytes per ggml type and the embedding and head bytes") {
    const ModelSpec spec = model_of(llama31_8b_q4_k_m());
    REQUIRE(spec.stored_weights);
    const StoredWeights& s = *spec.stored_weights;
    CHECK(s.tensors == 2 + 32 * 9 + 2);
    CHECK(s.bytes == kQ4KMBytes);
    CHECK(s.params == kLlama8BParams);
    CHECK(s.embedding_bytes == 295'501'824);
    CHECK(s.head_bytes == 430'940'160);
    CHECK(s.expert_bytes == 0);
    REQUIRE(s.by_dtype.size() == 3);
    CHECK(s.by_dtype[0].dtype == "Q4_K");
    CHECK(s.by_dtype[0].bytes == 2'794'455'040 - 32 * 32'768 + 566'231'040 + 295'501'824);
    CHECK(s.by_dtype[1].dtype == "Q6_K");
    CHECK(s.by_dtype[1].bytes == 825'753'600 + 430'940'160);
    CHECK(s.by_dtype[2].dtype == "F32");
    CHECK(s.by_dtype[2].bytes == 65 * 16'384 + 256);
    CHECK(s.source == "test.gguf");
    CHECK(spec.model_type == "llama");
    CHECK(spec.max_position_tokens == 131072);
    CHECK(spec.vocab == 128256);
    CHECK_FALSE(spec.tied_embeddings);
    CHECK(auto_kv_dtype(spec) == Dtype::Fp16);
}

TEST_CASE("a version 2 GGUF reads as version 3 does") {
    const ModelSpec v2 = model_of(llama31_8b_q4_k_m(2));
    CHECK(v2.stored_weights->bytes == kQ4KMBytes);
    CHECK_THAT(v2.notes.back(), Catch::Contains("GGUF v2 header"));
}

TEST_CASE("GGUF families map to their transformers configs") {
    SECTION("qwen3moe: 128 experts of which 8 per token, and the routed experts' bytes") {
        GgufWriter w = family("qwen3moe", 48, 2048, 32, 4);
        w.kv_u32("qwen3moe.attention.key_length", 128);
        w.kv_u32("qwen3moe.attention.value_length", 128);
        w.kv_u32("qwen3moe.expert_count", 128);
        w.kv_u32("qwen3moe.expert_used_count", 8);
        w.kv_u32("qwen3moe.expert_feed_forward_length", 768);
        w.tensor("blk.0.ffn_gate_exps.weight", {2048, 768, 128}, kQ4_K);
        const ModelSpec s = model_of(w);
        CHECK(s.model_type == "qwen3_moe");
        CHECK(s.experts == 128);
        CHECK(s.experts_per_token == 8);
        CHECK(s.layers.size() == 48);
        CHECK(s.layers[0].kv_heads == 4);
        CHECK(s.layers[0].k_head_dim == 128);
        CHECK(s.tied_embeddings);  // no output.weight
        CHECK(s.stored_weights->expert_bytes == 2048LL * 768 * 128 / 256 * 144);
    }
    SECTION("llama with experts is Mixtral, and old per-expert tensors count as experts") {
        GgufWriter w = family("llama", 32, 4096, 32, 8);
        w.kv_u32("llama.expert_count", 8);
        w.kv_u32("llama.expert_used_count", 2);
        w.tensor("blk.0.ffn_gate.3.weight", {4096, 14336}, kQ4_K);
        const ModelSpec s = model_of(w);
        CHECK(s.model_type == "mixtral");
        CHECK(s.experts == 8);
        CHECK(s.stored_weights->expert_bytes == 4096LL * 14336 / 256 * 144);
    }
    SECTION("gemma2: even layers slide over attention.sliding_window, odd layers are full") {
        GgufWriter w = family("gemma2", 42, 3584, 16, 8);
        w.kv_u32("gemma2.attention.key_length", 256);
        w.kv_u32("gemma2.attention.value_length", 256);
        w.kv_u32("gemma2.attention.sliding_window", 4096);
        const ModelSpec s = model_of(w);
        CHECK(s.layers[0].kind == LayerKind::Sliding);
        CHECK(s.layers[0].window_tokens == 4096);
        CHECK(s.layers[1].kind == LayerKind::Full);
        CHECK(s.layers[0].k_head_dim == 256);
    }
    SECTION("gemma3: five sliding layers per full one") {
        GgufWriter w = family("gemma3", 26, 1152, 4, 1);
        w.kv_u32("gemma3.attention.key_length", 256);
        w.kv_u32("gemma3.attention.sliding_window", 512);
        const ModelSpec s = model_of(w);
        CHECK(s.model_type == "gemma3_text");
        for (int i = 0; i < 5; ++i) CHECK(s.layers[i].kind == LayerKind::Sliding);
        CHECK(s.layers[5].kind == LayerKind::Full);
    }
    SECTION("phi3: llama.cpp ignores the sliding window, so every layer is full") {
        GgufWriter w = family("phi3", 32, 3072, 32, 32);
        w.kv_u32("phi3.attention.sliding_window", 2047);
        const ModelSpec s = model_of(w);
        CHECK(s.layers[0].kind == LayerKind::Full);
        CHECK_THAT(s.notes.back(), Catch::Contains("not applied"));
    }
    SECTION("qwen2 keeps its QKV biases and reads the vocabulary from token_embd without vocab_size") {
        GgufWriter w;
        w.kv_str("general.architecture", "qwen2");
        w.kv_u32("qwen2.block_count", 28);
        w.kv_u32("qwen2.embedding_length", 3584);
        w.kv_u32("qwen2.attention.head_count", 28);
        w.kv_u32("qwen2.attention.head_count_kv", 4);
        w.kv_u32("qwen2.feed_forward_length", 18944);
        w.tensor("token_embd.weight", {3584, 152064}, kQ4_K);
        w.tensor("output.weight", {3584, 152064}, kQ6_K);
        const ModelSpec s = model_of(w);
        CHECK(s.vocab == 152064);
        CHECK(s.head_dim == 128);
        CHECK_FALSE(s.tied_embeddings);
    }
    SECTION("an architecture kvplan does not map is refused, naming the supported ones") {
        CHECK_THROWS_WITH(model_of(family("mamba", 2, 64, 1, 1)),
                          Catch::Contains("general.architecture: \"mamba\" is not an architecture") &&
                              Catch::Contains("supported: llama, qwen2, qwen2moe, qwen3, qwen3moe, gemma, gemma2, gemma3, phi3"));
    }
}

TEST_CASE("GGUF metadata errors name the GGUF key") {
    GgufWriter w = family("llama", 32, 4096, 32, 3);
    CHECK_THROWS_WITH(model_of(w), Catch::Contains("test.gguf: llama.attention.head_count_kv: 3 must divide llama.attention.head_count (32)"));
}

TEST_CASE("a per-layer GGUF head count is read when every layer agrees, refused when they differ") {
    GgufWriter same = family("llama", 2, 4096, 32, 0);
    same.kv_u32_array("llama.attention.head_count_kv", {8, 8});
    CHECK(model_of(same).layers[1].kv_heads == 8);
    GgufWriter differ = family("llama", 2, 4096, 32, 0);
    differ.kv_u32_array("llama.attention.head_count_kv", {8, 4});
    CHECK_THROWS_WITH(model_of(differ), Catch::Contains("llama.attention.head_count_kv: per-layer values that differ are not supported"));
}

TEST_CASE("a broken GGUF file is one error line naming the file, exit 65") {
    const fs::path dir = scratch().path();
    const std::string good = llama31_8b_q4_k_m().header();
    auto raw = [&](const std::string& name, const std::string& bytes) { return scratch().write(name, bytes); };
    auto header = [](std::uint32_t version, std::uint64_t tensors, std::uint64_t kvs) {
        std::string h = "GGUF";
        GgufWriter::u32(h, version);
        GgufWriter::u64(h, tensors);
        GgufWriter::u64(h, kvs);
        return h;
    };

    SECTION("a truncated header") {
        // Cut inside the tensor infos (a cut inside the tokenizer's array is
        // refused sooner: its count no longer fits in the bytes left).
        const std::size_t cut = good.size() - 100;
        expect_error(
            raw("truncated.gguf", good.substr(0, cut)), 65,
            {"truncated GGUF header: expected tensor \"output_norm.weight\"'s dimension 0", "but the file ends at byte " + std::to_string(cut)});
    }
    SECTION("version 1") {
        expect_error(raw("v1.gguf", header(1, 0, 0)), 65, {"GGUF version 1", "convert the model again"});
    }
    SECTION("a big-endian file") {
        expect_error(raw("big_endian.gguf", "GGUF" + std::string("\0\0\0\3", 4) + std::string(16, '\0')), 65, {"big-endian GGUF"});
    }
    SECTION("not a GGUF file at all") {
        expect_error(raw("not.gguf", "{\"model_type\": \"llama\"}"), 65, {"not a GGUF file", "found \"{\"mo\""});
    }
    SECTION("a string longer than the file") {
        std::string h = header(3, 0, 1);
        GgufWriter::u64(h, 1ULL << 40);
        expect_error(raw("huge_string.gguf", h + "general.architecture"), 65,
                     {"expected metadata key 0 (1099511627776 bytes) at byte 32", "but the file ends at byte 52"});
    }
    SECTION("an array of 10^12 elements") {
        std::string h = header(3, 0, 1);
        GgufWriter::str(h, "tokenizer.ggml.tokens");
        GgufWriter::u32(h, 9);
        GgufWriter::u32(h, 4);
        GgufWriter::u64(h, 1'000'000'000'000ULL);
        expect_error(raw("huge_array.gguf", h), 65, {"metadata \"tokenizer.ggml.tokens\": an array of 1000000000000 elements"});
    }
    SECTION("an unknown metadata value type") {
        std::string h = header(3, 0, 1);
        GgufWriter::str(h, "general.architecture");
        GgufWriter::u32(h, 13);
        expect_error(raw("value_type.gguf", h + std::string(8, '\0')), 65, {"metadata \"general.architecture\": unknown GGUF value type 13"});
    }
    SECTION("more tensors than the format allows") {
        expect_error(raw("tensor_count.gguf", header(3, 1ULL << 21, 0)), 65, {"tensor_count: expected at most", "found 2097152"});
    }
    SECTION("an unknown ggml type") {
        GgufWriter w = family("llama", 1, 64, 1, 1);
        std::string t;
        GgufWriter::str(t, "blk.0.attn_q.weight");
        GgufWriter::u32(t, 2);
        GgufWriter::u64(t, 64);
        GgufWriter::u64(t, 64);
        GgufWriter::u32(t, 99);
        GgufWriter::u64(t, 0);
        w.tensor_raw(t);
        expect_error(w.write(dir / "ggml_type.gguf"), 65, {"tensor \"blk.0.attn_q.weight\": unknown ggml type 99"});
    }
    SECTION("five dimensions") {
        GgufWriter w = family("llama", 1, 64, 1, 1);
        std::string t;
        GgufWriter::str(t, "blk.0.attn_q.weight");
        GgufWriter::u32(t, 5);
        expect_error((w.tensor_raw(t), w.write(dir / "n_dims.gguf")), 65, {"n_dims: expected 1 to 4, found 5"});
    }
    SECTION("dimensions that overflow") {
        GgufWriter w = family("llama", 1, 64, 1, 1);
        std::string t;
        GgufWriter::str(t, "blk.0.attn_q.weight");
        GgufWriter::u32(t, 2);
        GgufWriter::u64(t, 1ULL << 32);
        GgufWriter::u64(t, 1ULL << 32);
        expect_error((w.tensor_raw(t), w.write(dir / "dims.gguf")), 65, {"dimensions multiply past 2^63"});
    }
    SECTION("a tensor whose bytes overflow though its elements do not") {
        GgufWriter w = family("llama", 1, 64, 1, 1);
        std::string t;
        GgufWriter::str(t, "blk.0.attn_q.weight");
        GgufWriter::u32(t, 1);
        GgufWriter::u64(t, 1ULL << 62);
        GgufWriter::u32(t, 0);  // F32: 4 bytes each
        expect_error((w.tensor_raw(t), w.write(dir / "bytes.gguf")), 65, {"its size in bytes passes 2^63"});
    }
    SECTION("a header without its tensor data") {
        expect_error(llama31_8b_q4_k_m().write(dir / "header_only.gguf", false), 65,
                     {"tensor \"token_embd.weight\": its 295501824 bytes of data at offset 0 run past the end of the file"});
    }
    SECTION("an architecture kvplan does not map") {
        expect_error(family("rwkv6", 1, 64, 1, 1).write(dir / "rwkv.gguf"), 65, {"general.architecture: \"rwkv6\"", "supported: llama"});
    }
}

TEST_CASE("a missing GGUF file is a usage error, exit 2") {
    const Run r = Run::kvplan({"size", "--model", (scratch().path() / "missing.gguf").string()});
    CHECK(r.exit_code == 2);
    CHECK(count_lines(r.err) == 1);
}
