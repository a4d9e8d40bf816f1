// A GGUF header -> ModelSpec: the metadata written as the config.json keys
// it stands for, so that parse_model_config applies every family rule once,
// and the tensor infos as the stored weights. Key names: llama.cpp
// src/llama-arch.cpp (LLM_KV_NAMES), "%s" being general.architecture.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/model/config_parser.hpp"
#include "core/model/config_parts.hpp"
#include "io/gguf_reader.hpp"

namespace kvplan {

namespace {

// The architectures kvplan maps, with the transformers model_type and class
// whose config.json says the same. Llama and Mistral GGUFs are both "llama";
// Mixtral is "llama" with llama.expert_count.
struct GgufFamily {
    const char* arch;
    const char* model_type;
    const char* architecture;
};

constexpr GgufFamily kFamilies[] = {
    {"llama", "llama", "LlamaForCausalLM"},    {"qwen2", "qwen2", "Qwen2ForCausalLM"},           {"qwen2moe", "qwen2_moe", "Qwen2MoeForCausalLM"},
    {"qwen3", "qwen3", "Qwen3ForCausalLM"},    {"qwen3moe", "qwen3_moe", "Qwen3MoeForCausalLM"}, {"gemma", "gemma", "GemmaForCausalLM"},
    {"gemma2", "gemma2", "Gemma2ForCausalLM"}, {"gemma3", "gemma3_text", "Gemma3ForCausalLM"},   {"phi3", "phi3", "Phi3ForCausalLM"},
};

std::string family_list() {
    std::string out;
    for (const GgufFamily& f : kFamilies) out += (out.empty() ? "" : ", ") + std::string(f.arch);
    return out;
}

// llama.h's llama_ftype, for the note on general.file_type.
std::string file_type_name(std::int64_t id) {
    static const std::map<std::int64_t, const char*> names = {
        {0, "ALL_F32"},        {1, "MOSTLY_F16"},     {2, "MOSTLY_Q4_0"},       {3, "MOSTLY_Q4_1"},    {7, "MOSTLY_Q8_0"},     {8, "MOSTLY_Q5_0"},
        {9, "MOSTLY_Q5_1"},    {10, "MOSTLY_Q2_K"},   {11, "MOSTLY_Q3_K_S"},    {12, "MOSTLY_Q3_K_M"}, {13, "MOSTLY_Q3_K_L"},  {14, "MOSTLY_Q4_K_S"},
        {15, "MOSTLY_Q4_K_M"}, {16, "MOSTLY_Q5_K_S"}, {17, "MOSTLY_Q5_K_M"},    {18, "MOSTLY_Q6_K"},   {19, "MOSTLY_IQ2_XXS"}, {20, "MOSTLY_IQ2_XS"},
        {21, "MOSTLY_Q2_K_S"}, {22, "MOSTLY_IQ3_XS"}, {23, "MOSTLY_IQ3_XXS"},   {24, "MOSTLY_IQ1_S"},  {25, "MOSTLY_IQ4_NL"},  {26, "MOSTLY_IQ3_S"},
        {27, "MOSTLY_IQ3_M"},  {28, "MOSTLY_IQ2_S"},  {29, "MOSTLY_IQ2_M"},     {30, "MOSTLY_IQ4_XS"}, {31, "MOSTLY_IQ1_M"},   {32, "MOSTLY_BF16"},
        {36, "MOSTLY_TQ1_0"},  {37, "MOSTLY_TQ2_0"},  {38, "MOSTLY_MXFP4_MOE"}, {39, "MOSTLY_NVFP4"},  {40, "MOSTLY_Q1_0"},
    };
    auto it = names.find(id);
    return it == names.end() ? "unknown to kvplan" : it->second;
}

// Typed access to the metadata, with messages naming the GGUF key.
class Meta {
public:
    Meta(const GgufHeader& h, const std::string& source) : h_(h), source_(source) {}

    [[noreturn]] void fail(const std::string& key, const std::string& message) const { data_error(source_ + ": " + key + ": " + message); }

    const GgufValue* find(const std::string& key) const {
        auto it = h_.metadata.find(key);
        return it == h_.metadata.end() ? nullptr : &it->second;
    }

    // An integer in [min, max]. A per-layer array (llama.cpp reads some keys
    // either way) is accepted when every layer has the same value.
    std::optional<std::int64_t> get_int(const std::string& key, std::int64_t min, std::int64_t max) const {
        const GgufValue* v = find(key);
        if (!v) return std::nullopt;
        std::optional<std::int64_t> value = v->integer;
        if (v->count > 0 && v->ints.size() == v->count) {
            if (std::adjacent_find(v->ints.begin(), v->ints.end(), std::not_equal_to<>()) != v->ints.end())
                fail(key, "per-layer values that differ are not supported (expected one value for every layer)");
            value = v->ints.front();
        }
        if (!value || v->type == 7 || *value < min || *value > max)
            fail(key, fmt::format("expected an integer in [{}, {}]{}", min, max, value && v->type != 7 ? ", found " + std::to_string(*value) : ""));
        return value;
    }

    std::int64_t require_int(const std::string& key, std::int64_t min, std::int64_t max) const {
        if (auto v = get_int(key, min, max)) return *v;
        fail(key, "missing (expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "])");
    }

    std::optional<double> get_finite(const std::string& key) const {
        const GgufValue* v = find(key);
        if (v && v->number && std::isfinite(*v->number)) return v->number;
        return std::nullopt;
    }

    std::string require_string(const std::string& key) const {
        const GgufValue* v = find(key);
        if (!v || !v->text) fail(key, "missing (expected a string)");
        return *v->text;
    }

private:
    const GgufHeader& h_;
    const std::string& source_;
};

const GgufTensor* find_tensor(const GgufHeader& h, const std::string& name) {
    for (const GgufTensor& t : h.tensors)
        if (t.name == name) return &t;
    return nullptr;
}

// vocab_size: <arch>.vocab_size, else the token embedding's rows (what the
// weights hold; Qwen2.5 pads it past the tokenizer's), else the tokenizer's count.
std::int64_t vocab_size(const Meta& m, const GgufHeader& h, const std::string& arch) {
    if (auto v = m.get_int(arch + ".vocab_size", 1, kMaxVocab)) return *v;
    if (const GgufTensor* t = find_tensor(h, "token_embd.weight"); t && t->dims.size() == 2 && t->dims[1] >= 1) return t->dims[1];
    if (const GgufValue* tokens = m.find("tokenizer.ggml.tokens"); tokens && tokens->count >= 1) return static_cast<std::int64_t>(tokens->count);
    m.fail(arch + ".vocab_size", "missing, and no token_embd.weight tensor or tokenizer.ggml.tokens array to count");
}

// The attention shape, checked here so that messages name the GGUF keys.
void attention_keys(const Meta& m, const std::string& a, nlohmann::json& cfg) {
    const std::int64_t hidden = m.require_int(a + ".embedding_length", 1, kMaxHidden);
    const std::int64_t heads = m.require_int(a + ".attention.head_count", 1, kMaxHeads);
    const std::int64_t kv = m.get_int(a + ".attention.head_count_kv", 1, kMaxHeads).value_or(heads);
    if (heads % kv != 0) m.fail(a + ".attention.head_count_kv", fmt::format("{} must divide {}.attention.head_count ({})", kv, a, heads));
    cfg["hidden_size"] = hidden;
    cfg["num_attention_heads"] = heads;
    cfg["num_key_value_heads"] = kv;
    if (auto k = m.get_int(a + ".attention.key_length", 1, 100'000)) {
        if (auto v = m.get_int(a + ".attention.value_length", 1, 100'000); v && *v != *k)
            m.fail(a + ".attention.value_length",
                   fmt::format("{} differs from {}.attention.key_length ({}); kvplan sizes equal K and V heads", *v, a, *k));
        cfg["head_dim"] = *k;
    } else if (hidden % heads != 0) {
        m.fail(a + ".embedding_length",
               fmt::format("{} is not divisible by {}.attention.head_count ({}) and there is no attention.key_length", hidden, a, heads));
    }
}

// Experts: Mixtral's, Qwen-MoE's (with a shared expert) and Qwen3-MoE's.
void expert_keys(const Meta& m, const std::string& a, nlohmann::json& cfg) {
    const std::int64_t experts = m.get_int(a + ".expert_count", 0, kMaxExperts).value_or(0);
    if (experts == 0) return;
    cfg[a == "llama" ? "num_local_experts" : "num_experts"] = experts;
    cfg["num_experts_per_tok"] = m.require_int(a + ".expert_used_count", 1, experts);
    if (auto e = m.get_int(a + ".expert_feed_forward_length", 1, kMaxHidden * 64)) cfg["moe_intermediate_size"] = *e;
    if (auto s = m.get_int(a + ".expert_shared_feed_forward_length", 1, kMaxHidden * 64)) cfg["shared_expert_intermediate_size"] = *s;
}

// The config.json a transformers checkpoint of this shape would carry.
nlohmann::json config_of(const Meta& m, const GgufHeader& h, const GgufFamily& f, std::vector<std::string>& notes) {
    const std::string a = f.arch;
    nlohmann::json cfg;
    const bool moe = m.get_int(a + ".expert_count", 0, kMaxExperts).value_or(0) > 0;
    cfg["model_type"] = moe && a == "llama" ? "mixtral" : f.model_type;
    cfg["architectures"] = {moe && a == "llama" ? "MixtralForCausalLM" : f.architecture};
    cfg["torch_dtype"] = "float16";  // llama.cpp computes in f16/f32; the stored bytes replace the formula's
    cfg["num_hidden_layers"] = m.require_int(a + ".block_count", 1, kMaxLayers);
    attention_keys(m, a, cfg);
    cfg["vocab_size"] = vocab_size(m, h, a);
    if (auto v = m.get_int(a + ".feed_forward_length", 1, kMaxHidden * 64)) cfg["intermediate_size"] = *v;
    if (auto v = m.get_int(a + ".context_length", 1, kMaxTokens)) cfg["max_position_embeddings"] = *v;
    if (auto v = m.get_finite(a + ".rope.freq_base")) cfg["rope_theta"] = *v;
    if (auto v = m.get_finite(a + ".attention.layer_norm_rms_epsilon")) cfg["rms_norm_eps"] = *v;
    // llama.cpp ties the head to the embedding when output.weight is absent.
    cfg["tie_word_embeddings"] = find_tensor(h, "output.weight") == nullptr;
    expert_keys(m, a, cfg);
    if (a == "gemma2" || a == "gemma3") {
        // llama.cpp: Gemma-2 alternates sliding and full layers; Gemma-3 has
        // five sliding layers per full one (set_swa_pattern(6)).
        cfg["sliding_window"] = m.require_int(a + ".attention.sliding_window", 1, kMaxTokens);
        if (a == "gemma3") cfg["sliding_window_pattern"] = 6;
        notes.push_back(
            "llama.cpp keeps sliding-window layers at the window plus one micro-batch (n_swa + n_ubatch tokens) "
            "unless --swa-full; kvplan sizes them at the window");
    }
    if (a == "phi3")
        if (auto w = m.get_int(a + ".attention.sliding_window", 0, kMaxTokens); w && *w > 0)
            notes.push_back(
                fmt::format("phi3.attention.sliding_window {} not applied: llama.cpp disables Phi-3 sliding-window "
                            "attention (llama.cpp pull 13676) and caches every token",
                            *w));
    return cfg;
}

// llama.cpp's converter stores RoPE frequency tables (Llama-3.1's rope_freqs,
// Phi-3's long/short factors) computed from rope_scaling; transformers keeps
// them as buffers, not parameters. Their bytes are loaded; their elements are
// not learned parameters.
bool rope_table(const std::string& name) {
    return name == "rope_freqs.weight" || name == "rope_factors_long.weight" || name == "rope_factors_short.weight";
}

// Routed experts: merged 3-D tensors (blk.N.ffn_gate_exps.weight) or the old
// one-tensor-per-expert layout (blk.N.ffn_gate.E.weight).
bool expert_tensor(const std::string& name) {
    if (name.find("_exps") != std::string::npos) return true;
    for (const char* part : {".ffn_gate.", ".ffn_up.", ".ffn_down."}) {
        auto at = name.find(part);
        if (at == std::string::npos) continue;
        std::size_t i = at + std::string(part).size(), digits = 0;
        while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i, ++digits;
        if (digits > 0 && name.compare(i, std::string::npos, ".weight") == 0) return true;
    }
    return false;
}

StoredWeights stored_weights(const GgufHeader& h, const std::string& source) {
    StoredWeights s;
    s.source = std::filesystem::path(source).filename().string();
    s.files = 1;
    s.tensors = static_cast<std::int64_t>(h.tensors.size());
    std::map<std::string, StoredDtype> by;
    for (const GgufTensor& t : h.tensors) {
        s.bytes = checked_add(s.bytes, t.bytes, "stored weight bytes");
        if (!rope_table(t.name)) s.params = checked_add(s.params, t.elements, "stored elements");
        StoredDtype& d = by[ggml_type_info(t.type)->name];
        d.dtype = ggml_type_info(t.type)->name;
        d.params = checked_add(d.params, t.elements, "stored elements");
        d.bytes = checked_add(d.bytes, t.bytes, "stored weight bytes");
        if (t.name == "token_embd.weight") s.embedding_bytes = t.bytes;
        else if (t.name == "output.weight") s.head_bytes = t.bytes;
        else if (expert_tensor(t.name)) s.expert_bytes = checked_add(s.expert_bytes, t.bytes, "expert bytes");
    }
    for (auto& [name, d] : by) s.by_dtype.push_back(d);
    std::stable_sort(s.by_dtype.begin(), s.by_dtype.end(), [](const StoredDtype& x, const StoredDtype& y) { return x.bytes > y.bytes; });
    return s;
}

}  // namespace

ModelSpec gguf_model(const GgufHeader& h, const std::string& source) {
    const Meta m(h, source);
    const std::string arch = m.require_string("general.architecture");
    const auto f = std::find_if(std::begin(kFamilies), std::end(kFamilies), [&](const GgufFamily& x) { return arch == x.arch; });
    if (f == std::end(kFamilies))
        m.fail("general.architecture", "\"" + arch + "\" is not an architecture kvplan reads from GGUF (supported: " + family_list() + ")");
    if (h.tensors.empty()) data_error(source + ": no tensors (a vocabulary-only GGUF?); kvplan sizes a model's weights");
    if (auto n = m.get_int("split.count", 0, 100'000); n && *n > 1)
        m.fail("split.count", fmt::format("{}: a GGUF split into {} files; merge them first (llama-gguf-split --merge)", *n, *n));
    std::vector<std::string> notes;
    const nlohmann::json cfg = config_of(m, h, *f, notes);
    ModelSpec spec = parse_model_config(cfg, source + " (GGUF metadata as config.json)");
    spec.stored_weights = overflow_blames(source, [&] { return stored_weights(h, source); });
    spec.checkpoint_dtype = Dtype::Fp16;
    spec.engine_kv_dtype = Dtype::Fp16;  // llama.cpp's --cache-type-k / --cache-type-v default f16
    const std::optional<std::int64_t> ftype = m.find("general.file_type") ? m.find("general.file_type")->integer : std::nullopt;
    spec.notes.push_back(fmt::format(
        "read from a GGUF v{} header ({}): weights are the tensors' stored bytes; the KV cache is "
        "llama.cpp's default f16 (--cache-type-k/-v f16) unless --kv-dtype says otherwise",
        h.version, ftype ? fmt::format("general.file_type {}, {}", *ftype, file_type_name(*ftype)) : std::string("no general.file_type")));
    spec.notes.insert(spec.notes.end(), notes.begin(), notes.end());
    return spec;
}

}  // namespace kvplan
