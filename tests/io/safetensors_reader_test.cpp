// Checkpoint folders whose weights kvplan reads from the safetensors headers.
// Each test writes the headers itself and leaves the tensor data sparse (the
// file has its full size but no blocks on disk): kvplan must never read it.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;
namespace fs = std::filesystem;

namespace {

struct Tensor {
    std::string name;
    std::string dtype;
    std::vector<std::int64_t> shape;
};

std::int64_t element_bytes_x2(const std::string& dtype) {  // twice the bytes per element (F4 is half a byte)
    if (dtype == "F32" || dtype == "I32") return 8;
    if (dtype == "BF16" || dtype == "F16") return 4;
    if (dtype == "F4") return 1;
    return 2;  // U8, I8, F8_E4M3
}

// Writes one .safetensors file: the 8-byte length, the JSON header, then
// the data's size as a hole.
void write_safetensors(const fs::path& file, const std::vector<Tensor>& tensors) {
    nlohmann::ordered_json header;
    header["__metadata__"] = {{"format", "pt"}};
    std::int64_t offset = 0;
    for (const Tensor& t : tensors) {
        std::int64_t n = 1;
        for (std::int64_t d : t.shape) n *= d;
        const std::int64_t bytes = (n * element_bytes_x2(t.dtype) + 1) / 2;
        header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    const std::string text = header.dump();
    std::ofstream out(file, std::ios::binary);
    const std::uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << text;
    out.close();
    fs::resize_file(file, 8 + n + static_cast<std::uint64_t>(offset));
}

std::string fresh_folder(const std::string& name) {
    std::string templ = (fs::temp_directory_path() / ("kvplan-st-" + name + "-XXXXXX")).string();
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    fs::copy_file(std::string(KVPLAN_SOURCE_DIR) + "/models/presets/llama-3.1-8b.json", fs::path(templ) / "config.json");
    return templ;
}

// Llama-3.1-8B's tensors as its checkpoint names them, the linears in `linear_dtype`
// (with an F32 weight_scale each when `scales`), the rest in BF16.
std::vector<Tensor> llama_8b(const std::string& linear_dtype = "BF16", bool scales = false, std::int64_t layers = 32) {
    std::vector<Tensor> t{{"model.embed_tokens.weight", "BF16", {128256, 4096}}};
    const std::vector<std::pair<std::string, std::vector<std::int64_t>>> linears{
        {"self_attn.q_proj", {4096, 4096}}, {"self_attn.k_proj", {1024, 4096}}, {"self_attn.v_proj", {1024, 4096}},
        {"self_attn.o_proj", {4096, 4096}}, {"mlp.gate_proj", {14336, 4096}},   {"mlp.up_proj", {14336, 4096}},
        {"mlp.down_proj", {4096, 14336}}};
    for (std::int64_t l = 0; l < layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        for (const auto& [name, shape] : linears) {
            t.push_back({p + name + ".weight", linear_dtype, shape});
            if (scales) t.push_back({p + name + ".weight_scale", "F32", {}});
        }
        t.push_back({p + "input_layernorm.weight", "BF16", {4096}});
        t.push_back({p + "post_attention_layernorm.weight", "BF16", {4096}});
    }
    t.push_back({"model.norm.weight", "BF16", {4096}});
    t.push_back({"lm_head.weight", "BF16", {128256, 4096}});
    return t;
}

nlohmann::json size_json(const std::vector<std::string>& extra) {
    std::vector<std::string> args{"size", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = kvplan_run(args);
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("a bf16 checkpoint's safetensors headers give the bytes and parameters the formula gives") {
    // Llama-3.1-8B in two shards: 8,030,261,248 parameters (Meta's model card:
    // 8.03 B) x 2 B = 16,060,522,496 B; embeddings and lm_head 128,256 x 4,096 x 2 B each.
    const std::string dir = fresh_folder("bf16");
    std::vector<Tensor> all = llama_8b();
    write_safetensors(fs::path(dir) / "model-00001-of-00002.safetensors", {all.begin(), all.begin() + 150});
    write_safetensors(fs::path(dir) / "model-00002-of-00002.safetensors", {all.begin() + 150, all.end()});
    const auto j = size_json({"--model", dir});
    CHECK(j["weights_from"] == "files");
    CHECK(j["weights_bytes"] == 16'060'522'496);
    CHECK(j["formula_weights_bytes"] == 16'060'522'496);
    CHECK(j["params"] == 8'030'261'248);
    CHECK(j["stored_weights"]["files"] == 2);
    CHECK(j["stored_weights"]["tensors"] == 291);  // 1 + 32 x 9 + 2
    CHECK(j["stored_weights"]["embedding_bytes"] == 1'050'673'152);
    CHECK(j["stored_weights"]["head_bytes"] == 1'050'673'152);
    CHECK(j["stored_weights"]["by_dtype"][0]["dtype"] == "BF16");
    CHECK(j["notes"][0].get<std::string>().find("agrees within 0.5%") != std::string::npos);
}

TEST_CASE("stored bytes that disagree with the formula are said and used for the budget") {
    // An FP8 checkpoint whose config.json lost its quantization_config: the
    // formula sizes bf16 (16,060,522,496 B). Stored, by hand: the 224 linears'
    // 6,979,321,856 values x 1 B + 224 F32 scales x 4 B = 6,979,322,752; the
    // embeddings, lm_head and norms in BF16: 2,101,346,304 + 532,480. Total
    // 9,081,201,536 B (-43.5%).
    const std::string dir = fresh_folder("fp8");
    write_safetensors(fs::path(dir) / "model.safetensors", llama_8b("F8_E4M3", true));
    const auto j = size_json({"--model", dir});
    CHECK(j["weights_bytes"] == 9'081'201'536);
    CHECK(j["formula_weights_bytes"] == 16'060'522'496);
    CHECK(j["params"] == 8'030'261'472);  // every stored element: the parameters and 224 scales
    CHECK(j["notes"][0].get<std::string>().find("differs by -43.5%; the stored bytes are used") != std::string::npos);
    CHECK(size_json({"--model", dir, "--weights-from", "formula"})["weights_bytes"] == 16'060'522'496);

    // The budget's weights line: vLLM loads what the files hold.
    auto r = kvplan_run({"concurrency", "--model", dir, "--gpu", "h100-sxm", "--context", "8192", "--json"});
    REQUIRE(r.code == 0);
    const auto c = nlohmann::json::parse(r.out);
    CHECK(c["weights_bytes_per_gpu"] == 9'081'201'536);
}

TEST_CASE("tensors of layers beyond num_hidden_layers are next-token-prediction layers and not loaded") {
    // A 33rd layer, as DeepSeek-V3 stores its MTP layer 61 beside 61 decoder
    // layers: its 7 linears (218,103,808 parameters) and 2 norms (8,192) in bf16,
    // 436,207,616 + 16,384 B, are skipped.
    const std::string dir = fresh_folder("mtp");
    write_safetensors(fs::path(dir) / "model.safetensors", llama_8b("BF16", false, 33));
    const auto j = size_json({"--model", dir});
    CHECK(j["weights_bytes"] == 16'060'522'496);
    CHECK(j["stored_weights"]["skipped_bytes"] == 436'207'616 + 16'384);
}

TEST_CASE("the index file or a shard given as --model stands for its folder") {
    const std::string dir = fresh_folder("index");
    write_safetensors(fs::path(dir) / "model-00001-of-00001.safetensors", llama_8b());
    std::ofstream(fs::path(dir) / "model.safetensors.index.json")
        << R"({"metadata": {"total_size": 16060522496}, "weight_map": {"lm_head.weight": "model-00001-of-00001.safetensors"}})";
    CHECK(size_json({"--model", dir + "/model.safetensors.index.json"})["weights_bytes"] == 16'060'522'496);
    CHECK(size_json({"--model", dir + "/model-00001-of-00001.safetensors"})["weights_from"] == "files");
}

TEST_CASE("shards the index names but the folder lacks: the formula with a warning, and --weights-from files refuses") {
    const std::string dir = fresh_folder("partial");
    write_safetensors(fs::path(dir) / "model-00001-of-00002.safetensors", llama_8b());
    std::ofstream(fs::path(dir) / "model.safetensors.index.json")
        << R"({"metadata": {"total_size": 16060522496}, "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})";
    const auto j = size_json({"--model", dir});
    CHECK(j["weights_from"] == "formula");
    REQUIRE(j["warnings"].size() == 1);
    CHECK(j["warnings"][0].get<std::string>().find("1 of 2 safetensors files") != std::string::npos);
    auto r = kvplan_run({"size", "--model", dir, "--weights-from", "files"});
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("--weights-from files") != std::string::npos);
}

TEST_CASE("a malformed safetensors header is a data error naming the file and the tensor") {
    const std::string dir = fresh_folder("bad");
    const fs::path file = fs::path(dir) / "model.safetensors";
    auto expect = [&](const std::string& header, const std::string& what) {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        const std::uint64_t n = header.size();
        for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
        out << header << std::string(64, '\0');
        out.close();
        auto r = kvplan_run({"size", "--model", dir});
        CHECK(r.code == 65);
        CHECK(r.out.empty());
        INFO(r.err);
        CHECK(r.err.find(file.string()) != std::string::npos);
        CHECK(r.err.find(what) != std::string::npos);
    };
    expect(R"({"w": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 1]}})", "tensor w: dtype \"Q4\": not a safetensors dtype");
    expect(R"({"w": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 6]}})", "6 bytes for 4 BF16 elements (expected 8)");
    expect(R"({"w": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 800]}})", "expected begin <= end <= 64");
    expect(R"({"w": {"dtype": "BF16", "shape": [-4], "data_offsets": [0, 8]}})", "shape: expected whole dimensions");
    expect(R"({"w": [1, 2]})", "tensor w: expected an object");
    expect(R"({"w": )", "not valid JSON");
    // A header length beyond the file.
    {
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out << std::string("\xff\xff\x00\x00\x00\x00\x00\x00", 8) << "{}";
    }
    auto r = kvplan_run({"size", "--model", dir});
    CHECK(r.code == 65);
    CHECK(r.err.find("header length 65535: expected at most 2 bytes") != std::string::npos);
}
