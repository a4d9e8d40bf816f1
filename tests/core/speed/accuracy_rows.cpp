#include "accuracy_rows.hpp"

#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/memory/capacity.hpp"
#include "io/engine_db.hpp"
#include "test_support.hpp"

namespace kvplan::test {

namespace {

bool starts(const std::string& s, const char* prefix) {
    return s.rfind(prefix, 0) == 0;
}
bool has(const std::string& s, const char* part) {
    return s.find(part) != std::string::npos;
}

// An MI250X is two GCDs, each its own device to software with half the
// package's memory, bandwidth and FLOP/s (gpus.json's mi250x is the package).
Gpu mi250x_gcd() {
    Gpu g = find_gpu(bundled_gpus(), "mi250x");
    g.id = "mi250x-gcd";
    g.memory_bytes /= 2;
    g.bandwidth_bytes_per_s /= 2;
    for (std::optional<double>* p : {&g.peak.fp32, &g.peak.tf32, &g.peak.bf16, &g.peak.fp16, &g.peak.fp8, &g.peak.int8})
        if (*p) **p /= 2;
    return g;
}

std::optional<Gpu> device(const std::string& name) {
    if (starts(name, "AMD MI250X (one GCD)")) return mi250x_gcd();
    // Most specific first.
    const std::pair<const char*, const char*> map[] = {{"Apple M1 Max", "m1-max"},
                                                       {"Apple M1", "m1"},
                                                       {"Apple M2 Ultra", "m2-ultra"},
                                                       {"Apple M3 Max", "m3-max"},
                                                       {"Intel Gaudi 2", "gaudi2"},
                                                       {"Intel Gaudi 3", "gaudi3"},
                                                       {"NVIDIA A100 PCIe", "a100-pcie-80gb"},
                                                       {"NVIDIA A100 (variant not stated) x", "a100-pcie-80gb"},  // llm-perf-bench: "over PCIe"
                                                       {"NVIDIA A100", "a100-sxm-80gb"},
                                                       {"NVIDIA A10G", "a10g"},
                                                       {"NVIDIA A40", "a40"},
                                                       {"NVIDIA B200", "b200"},
                                                       {"NVIDIA GB200", "gb200"},
                                                       {"NVIDIA GeForce RTX 3090 Ti", "rtx-3090-ti"},
                                                       {"NVIDIA GeForce RTX 3090", "rtx-3090"},
                                                       {"NVIDIA GeForce RTX 4090", "rtx-4090"},
                                                       {"NVIDIA H100 PCIe", "h100-pcie"},
                                                       {"NVIDIA H100", "h100-sxm"},
                                                       {"NVIDIA H200", "h200"},
                                                       {"NVIDIA L40S", "l40s"},
                                                       {"NVIDIA RTX 6000 Ada", "rtx-6000-ada"},
                                                       {"NVIDIA RTX A6000", "rtx-a6000"}};
    for (const auto& [prefix, id] : map)
        if (starts(name, prefix)) return find_gpu(bundled_gpus(), id);
    return std::nullopt;
}

ModelSpec config(const char* text) {
    return from_json(text);
}

// Published configs of the models the rows ran that kvplan has no preset for
// (meta-llama/Llama-2-70b-hf, Llama-2-13b-hf and Llama-3.1-405B config.json).
std::optional<ModelSpec> model_for(const std::string& name) {
    const bool llama2 = has(name, "Llama 2") || has(name, "LLaMA 2") || has(name, "Llama-2") || has(name, "Llama2") || has(name, "LLaMA 7B") ||
                        has(name, "LLaMA 70B") || name == "Llama 7B";
    if (has(name, "Mixtral")) return preset("mixtral-8x7b");
    if (has(name, "GPT-J")) return preset("gpt-j-6b");
    if (has(name, "405B"))
        return config(R"({"model_type": "llama", "num_hidden_layers": 126, "hidden_size": 16384, "num_attention_heads": 128,
            "num_key_value_heads": 8, "intermediate_size": 53248, "vocab_size": 128256, "max_position_embeddings": 131072,
            "torch_dtype": "bfloat16"})");
    if (llama2 && has(name, "13B"))
        return config(R"({"model_type": "llama", "num_hidden_layers": 40, "hidden_size": 5120, "num_attention_heads": 40,
            "num_key_value_heads": 40, "intermediate_size": 13824, "vocab_size": 32000, "max_position_embeddings": 4096,
            "torch_dtype": "float16"})");
    const bool seventy = has(name, "70");
    if (llama2)
        return seventy ? config(R"({"model_type": "llama", "num_hidden_layers": 80, "hidden_size": 8192, "num_attention_heads": 64,
            "num_key_value_heads": 8, "intermediate_size": 28672, "vocab_size": 32000, "max_position_embeddings": 4096,
            "torch_dtype": "float16"})")
                       : preset("llama-2-7b");
    return preset(seventy ? "llama-3.1-70b" : "llama-3.1-8b");  // Llama 3 / 3.1 / 3.3: the same shapes
}

// The weights as the row describes them.
std::string format_for(const std::string& precision, const std::string& framework) {
    if (has(precision, "Q4_K_M")) return "q4_k_m";
    if (has(precision, "GGUF 4-bit")) return "q4_0";  // llm-perf-bench's llama.cpp column: llama-bench's Q4_0
    if (has(precision, "q4f16_1") || (precision == "4-bit" && has(framework, "MLC"))) return "q4f16_1";
    if (has(precision, "EXL2 4.0 bpw")) return "exl2:4.0";
    if (has(precision, "EXL2 2.5 bpw")) return "exl2:2.5";
    if (has(precision, "GPTQ") || has(precision, "EXL2/GPTQ")) return "int4";
    if (has(precision, "int4 weight-only (group 32)")) return "int4:g32";
    if (has(precision, "int8 weight-only")) return "int8";
    if (precision == "bf16") return "bf16";
    if (precision == "F16" || precision == "FP16" || precision == "fp16") return "fp16";
    if (has(precision, "FP8") || precision == "fp8") return "fp8";
    return "auto";
}

std::string engine_for(const std::string& framework) {
    if (has(framework, "llama.cpp")) return "llamacpp";
    if (has(framework, "TensorRT-LLM")) return "trtllm";  // NeMo Framework inference is TensorRT-LLM based
    if (has(framework, "gpt-fast")) return "gpt-fast";
    if (has(framework, "MLC")) return "mlc";
    if (has(framework, "ExLlamaV2")) return "exllamav2";
    if (has(framework, "vLLM (")) return "vllm";
    return "generic";  // Gaudi's software stack: no profile
}

// The document a row was published in: its source up to the commit or the section.
std::string document(const std::string& source) {
    std::size_t end = source.size();
    for (const char* cut : {" @", " (", ","}) end = std::min(end, source.find(cut));
    return source.substr(0, end);
}

double number(const nlohmann::json& v) {
    return v.is_number() ? v.get<double>() : 0;
}

AccuracyRow read_row(const nlohmann::json& row) {
    AccuracyRow r;
    r.id = row.at("id").get<std::string>();
    r.category = row.at("category").get<std::string>();
    r.measured = row.at("value").get<double>();
    r.unit = row.at("unit").get<std::string>();
    r.source = document(row.at("source").get<std::string>());
    const std::string framework = row.value("framework", "");
    r.engine = engine_for(framework);
    const std::string precision = row.at("weights_precision").get<std::string>();
    const std::string kv_text = row.value("kv_dtype", "");
    r.gpus = row.value("num_gpus", 1);
    const bool llama_cpp = r.engine == "llamacpp";
    const std::optional<Gpu> g = device(row.at("gpu").get<std::string>());
    if (!g) {
        r.why = "device not in the database";
        return r;
    }
    if (!row.at("batch_size").is_number()) {
        r.why = "batch size chosen by the runtime, not published";
        return r;
    }
    if (has(precision, "NVFP4")) {
        r.why = "NVFP4 weights not modelled";
        return r;
    }
    r.gpu = *g;
    r.model = std::make_shared<const ModelSpec>(*model_for(row.at("model").get<std::string>()));
    r.moe = r.model->experts > 0;
    const std::string format = format_for(precision, framework);
    r.format = parse_weight_format("--weights-dtype", format);
    if (has(kv_text, "fp8") || has(precision, "fp8 KV")) r.kv = Dtype::Fp8;
    else if (llama_cpp || format == "fp16" || has(kv_text, "fp16")) r.kv = Dtype::Fp16;
    // llama.cpp splits layers across GPUs and runs them one after another: the step reads every weight at one
    // GPU's bandwidth, as if on one GPU. Everything else is tensor parallel.
    r.tp = llama_cpp ? 1 : r.gpus;
    r.batch = row.at("batch_size").get<std::int64_t>();
    r.input = static_cast<std::int64_t>(number(row.at("input_len")));
    r.output = static_cast<std::int64_t>(number(row.at("output_len")));
    if (r.category == "batch1_decode" && r.output == 0) {
        r.output = 128;  // lengths not published (ExLlamaV2's README, NVIDIA's GPT-J blog): 128 tokens
        r.why = "generation length not published: 128 tokens assumed";
    }
    r.per_gpu = has(r.unit, "/GPU");
    const CostModel m = make_cost_model(CostModelInputs{r.model.get(), r.gpu, r.format, r.kv, r.tp, Efficiency{}, std::nullopt});
    if ((r.category == "prefill" || r.category == "ttft") && m.flops_per_s <= 0) {
        r.why = "no FLOP/s figure for " + r.gpu.id + " in the database";
        return r;
    }
    r.setup = r.gpu.id + " x" + std::to_string(r.gpus) + (r.tp > 1 ? " TP" : "") + ", " + format + (r.kv == Dtype::Fp8 ? ", fp8 KV" : "");
    if (r.category == "batched_throughput") {
        // Does the batch fit at the final context by kvplan's count? A static batch that does not cannot have
        // run as published, which explains some of the largest misses.
        CapacityInputs cap;
        cap.gpu = r.gpu;
        cap.tp = r.tp;
        cap.contexts = {r.input + r.output};
        cap.kv_dtype = r.kv;
        cap.weights_bytes = static_cast<std::int64_t>(m.weight_bytes_total / static_cast<double>(r.tp));
        const std::int64_t fits = plan_capacity(*r.model, cap).rows.at(0).max_requests;
        if (fits < r.batch)
            r.why = "batch " + std::to_string(r.batch) + " exceeds the " + std::to_string(fits) + " sequences kvplan fits at " +
                    std::to_string(r.input + r.output) + " tokens";
    }
    r.predictable = true;
    return r;
}

// Σ decode_step(batch, c) for c = from .. from + steps - 1. A step's time is
// convex and piecewise linear in its context (memory- or compute-bound), so
// past 512 steps it is summed over 64 evenly spaced contexts by the
// trapezoid rule, within 0.1% of the exact sum and 30x cheaper for a fit.
double decode_sum(const CostModel& m, std::int64_t batch, std::int64_t from, std::int64_t steps) {
    if (steps <= 512) {
        double t = 0;
        for (std::int64_t j = 0; j < steps; ++j) t += decode_step(m, batch, from + j).total_s;
        return t;
    }
    const int n = 64;
    const double width = static_cast<double>(steps - 1) / n;
    double area = 0;
    for (int i = 0; i <= n; ++i) {
        const double t = decode_step(m, batch, from + static_cast<std::int64_t>(std::llround(i * width))).total_s;
        area += (i == 0 || i == n) ? t / 2 : t;
    }
    return area * width + (decode_step(m, batch, from).total_s + decode_step(m, batch, from + steps - 1).total_s) / 2;
}

}  // namespace

const std::vector<AccuracyRow>& accuracy_rows() {
    static const std::vector<AccuracyRow> rows = [] {
        std::ifstream in(std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/reference/decode_measurements.jsonl");
        std::vector<AccuracyRow> out;
        for (std::string line; std::getline(in, line);)
            if (!line.empty()) out.push_back(read_row(nlohmann::json::parse(line)));
        return out;
    }();
    return rows;
}

const EngineProfile& row_profile(const AccuracyRow& row) {
    return find_engine("--engine", row.engine);
}

double predict_row(const AccuracyRow& r, const EngineProfile& profile) {
    Efficiency e;
    e.profile = profile;
    const CostModel m = make_cost_model(CostModelInputs{r.model.get(), r.gpu, r.format, r.kv, r.tp, e, std::nullopt});
    if (r.category == "batch1_decode")  // tokens/s generating `output` tokens after the prompt (llama-bench tg N: from empty)
        return static_cast<double>(r.output) / decode_sum(m, 1, r.input, r.output);
    if (r.category == "prefill")  // llama-bench pp N: tokens/s of one N-token prefill
        return static_cast<double>(r.input) / prefill_step(m, 1, r.input).total_s;
    if (r.category == "ttft") return prefill_step(m, r.batch, r.input).total_s * 1e3;
    if (r.category == "e2e_latency") return (prefill_step(m, r.batch, r.input).total_s + decode_sum(m, r.batch, r.input, r.output - 1)) * 1e3;
    // batched_throughput: a static batch, every sequence prefilled, then decoded together.
    const double total = prefill_step(m, r.batch, r.input).total_s + decode_sum(m, r.batch, r.input, r.output - 1);
    const double tokens_per_s = static_cast<double>(r.batch * r.output) / total;
    return r.per_gpu ? tokens_per_s / static_cast<double>(r.gpus) : tokens_per_s;
}

}  // namespace kvplan::test
