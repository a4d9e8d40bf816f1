// A small GGUF writer for tests: the header as llama.cpp writes it (ggml
// docs/gguf.md, little endian), with the tensor data left as a hole
// (std::filesystem::resize_file makes the file its full size without
// writing it), since kvplan reads the header only. Block sizes are the
// test's own copy of ggml's type_traits, so the reader is checked against
// figures it did not compute.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvplan::test {

// ggml_type ids and block sizes (ggml/src/ggml.c type_traits).
struct TestGgmlType {
    std::uint32_t id;
    std::int64_t block;
    std::int64_t bytes;
};
constexpr TestGgmlType kF32{0, 1, 4}, kF16{1, 1, 2}, kQ8_0{8, 32, 34}, kQ4_K{12, 256, 144}, kQ6_K{14, 256, 210};

class GgufWriter {
public:
    explicit GgufWriter(std::uint32_t version = 3) : version_(version) {}

    static void u8(std::string& out, std::uint8_t v) { out.push_back(static_cast<char>(v)); }
    static void u32(std::string& out, std::uint32_t v) {
        for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    }
    static void u64(std::string& out, std::uint64_t v) {
        for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    }
    static void str(std::string& out, const std::string& s) {
        u64(out, s.size());
        out += s;
    }

    void kv_u32(const std::string& key, std::uint32_t v) {
        begin(key, 4);
        u32(kv_, v);
    }
    void kv_u64(const std::string& key, std::uint64_t v) {
        begin(key, 10);
        u64(kv_, v);
    }
    void kv_bool(const std::string& key, bool v) {
        begin(key, 7);
        u8(kv_, v ? 1 : 0);
    }
    void kv_f32(const std::string& key, float v) {
        begin(key, 6);
        std::uint32_t bits = 0;
        std::memcpy(&bits, &v, sizeof bits);
        u32(kv_, bits);
    }
    void kv_str(const std::string& key, const std::string& v) {
        begin(key, 8);
        str(kv_, v);
    }
    void kv_str_array(const std::string& key, std::uint64_t n, const std::function<std::string(std::uint64_t)>& item) {
        begin(key, 9);
        u32(kv_, 8);
        u64(kv_, n);
        for (std::uint64_t i = 0; i < n; ++i) str(kv_, item(i));
    }
    void kv_u32_array(const std::string& key, const std::vector<std::uint32_t>& v) {
        begin(key, 9);
        u32(kv_, 4);
        u64(kv_, v.size());
        for (std::uint32_t x : v) u32(kv_, x);
    }
    // Raw bytes appended to the metadata, for broken files; counts as `pairs` pairs.
    void kv_raw(const std::string& bytes, std::uint64_t pairs = 1) {
        kv_ += bytes;
        kv_count_ += pairs;
    }

    // dims in ggml order (dims[0] = row length). Offsets follow llama.cpp:
    // each tensor's data at the next multiple of 32 after the previous one.
    void tensor(const std::string& name, const std::vector<std::int64_t>& dims, TestGgmlType type) {
        std::int64_t elements = 1;
        for (std::int64_t d : dims) elements *= d;
        const std::int64_t bytes = elements / type.block * type.bytes;
        str(ti_, name);
        u32(ti_, static_cast<std::uint32_t>(dims.size()));
        for (std::int64_t d : dims) u64(ti_, static_cast<std::uint64_t>(d));
        u32(ti_, type.id);
        u64(ti_, data_);
        data_ += (static_cast<std::uint64_t>(bytes) + 31) / 32 * 32;
        ++tensor_count_;
    }
    void tensor_raw(const std::string& bytes, std::uint64_t tensors = 1) {
        ti_ += bytes;
        tensor_count_ += tensors;
    }
    void set_tensor_count(std::uint64_t n) { tensor_count_override_ = n; }

    // Magic, version, counts, metadata and tensor infos, padded to 32 bytes.
    std::string header() const {
        std::string out = "GGUF";
        u32(out, version_);
        u64(out, tensor_count_override_ ? *tensor_count_override_ : tensor_count_);
        u64(out, kv_count_);
        out += kv_;
        out += ti_;
        out.resize((out.size() + 31) / 32 * 32, '\0');
        return out;
    }
    std::uint64_t data_bytes() const { return data_; }

    // Writes the header, then extends the file over its data (a hole).
    std::filesystem::path write(const std::filesystem::path& file, bool with_data = true) const {
        const std::string h = header();
        {
            std::ofstream out(file, std::ios::binary | std::ios::trunc);
            out << h;
            if (!out) throw std::runtime_error("cannot write " + file.string());
        }
        if (with_data) std::filesystem::resize_file(file, h.size() + data_);
        return file;
    }

private:
    void begin(const std::string& key, std::uint32_t type) {
        str(kv_, key);
        u32(kv_, type);
        ++kv_count_;
    }

    std::uint32_t version_;
    std::string kv_, ti_;
    std::uint64_t kv_count_ = 0, tensor_count_ = 0, data_ = 0;
    std::optional<std::uint64_t> tensor_count_override_;
};

// llama.cpp's Q4_K_M mix for Llama-3.1-8B (src/llama-quant.cpp,
// llama_tensor_get_type): Q4_K by default; output.weight Q6_K; attn_v and
// ffn_down Q6_K where use_more_bits(i, 32) (layers 0-3, 28-31 and every
// third from 6: 16 of 32); 1-D norms and rope_freqs stay F32.
inline bool use_more_bits(int i, int n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

inline GgufWriter llama31_8b_q4_k_m(std::uint32_t version = 3) {
    GgufWriter w(version);
    w.kv_str("general.architecture", "llama");
    w.kv_str("general.name", "Meta Llama 3.1 8B Instruct");
    w.kv_u32("llama.block_count", 32);
    w.kv_u32("llama.context_length", 131072);
    w.kv_u32("llama.embedding_length", 4096);
    w.kv_u32("llama.feed_forward_length", 14336);
    w.kv_u32("llama.attention.head_count", 32);
    w.kv_u32("llama.attention.head_count_kv", 8);
    w.kv_f32("llama.rope.freq_base", 500000.0f);
    w.kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    w.kv_u32("llama.rope.dimension_count", 128);
    w.kv_u32("general.file_type", 15);  // LLAMA_FTYPE_MOSTLY_Q4_K_M
    w.kv_u32("llama.vocab_size", 128256);
    w.kv_str("tokenizer.ggml.model", "gpt2");
    // The tokenizer's 128,256 tokens: read past, never kept.
    w.kv_str_array("tokenizer.ggml.tokens", 128256, [](std::uint64_t i) { return "tok" + std::to_string(i); });
    w.kv_u32("general.quantization_version", 2);
    w.tensor("token_embd.weight", {4096, 128256}, kQ4_K);
    w.tensor("rope_freqs.weight", {64}, kF32);
    for (int i = 0; i < 32; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        const TestGgmlType more = use_more_bits(i, 32) ? kQ6_K : kQ4_K;
        w.tensor(b + "attn_norm.weight", {4096}, kF32);
        w.tensor(b + "ffn_down.weight", {14336, 4096}, more);
        w.tensor(b + "ffn_gate.weight", {4096, 14336}, kQ4_K);
        w.tensor(b + "ffn_up.weight", {4096, 14336}, kQ4_K);
        w.tensor(b + "ffn_norm.weight", {4096}, kF32);
        w.tensor(b + "attn_k.weight", {4096, 1024}, kQ4_K);
        w.tensor(b + "attn_output.weight", {4096, 4096}, kQ4_K);
        w.tensor(b + "attn_q.weight", {4096, 4096}, kQ4_K);
        w.tensor(b + "attn_v.weight", {4096, 1024}, more);
    }
    w.tensor("output_norm.weight", {4096}, kF32);
    w.tensor("output.weight", {4096, 128256}, kQ6_K);
    return w;
}

}  // namespace kvplan::test
