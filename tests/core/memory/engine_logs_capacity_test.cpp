// Every start-up log in shared/reference/engine_logs.jsonl (copied verbatim to
// tests/fixtures/reference/) replayed through plan_capacity:
//   1. given the KV pool a log reports, kvplan's token count must match the
//      logged one up to the log's own rounding (a pool printed as "3.81GiB"
//      is anything in [3.805, 3.815) GiB);
//   2. given only the GPU, the utilization and the logged weights, kvplan's
//      pool must be within 5% of the logged pool.
// Rows that log neither a pool nor weights are predicted from the GPU alone
// and printed; the test prints the whole error table (run `kvplan_tests
// "engine logs*" -s`, or see docs/concurrency.md where it is quoted).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/memory/capacity.hpp"
#include "io/gpu_db.hpp"
#include "test_support.hpp"

using namespace kvplan;
using namespace kvplan::test;

namespace {

constexpr double kGiB = 1073741824.0;

// How a row is replayed. `in` holds what the log's command line and GPU say.
struct Replay {
    Replay() = default;
    Replay(std::function<ModelSpec()> m, CapacityInputs i) : model(std::move(m)), in(std::move(i)) {}
    std::function<ModelSpec()> model;
    CapacityInputs in;
    // The pool the log reports: a value printed with two decimals in GiB
    // (pool_gib, +- half_width_gib), or exact bytes.
    std::optional<double> pool_gib;
    double half_width_gib = 0.005;
    std::optional<std::int64_t> pool_bytes;
    std::optional<std::int64_t> tokens;  // the token count the log reports (blocks x 16 for V0 rows)
    enum class Tokens { Exact, AtLeast, Mlc, None } token_check = Tokens::Exact;
    enum class Pool { Within5Percent, NothingFits, PrintOnly, None } pool_check = Pool::None;
    std::string why;  // for rows that are not checked, or checked loosely
};

// Published shapes for models with no bundled preset (each from its model card / config.json).
ModelSpec qwen3_235b() {
    return from_json(R"({"model_type": "qwen3_moe", "num_hidden_layers": 94, "hidden_size": 4096,
        "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 12288,
        "moe_intermediate_size": 1536, "num_experts": 128, "num_experts_per_tok": 8, "max_position_embeddings": 40960,
        "vocab_size": 151936, "torch_dtype": "bfloat16"})");
}
ModelSpec qwen25_05b() {
    return from_json(R"({"model_type": "qwen2", "num_hidden_layers": 24, "hidden_size": 896,
        "num_attention_heads": 14, "num_key_value_heads": 2, "intermediate_size": 4864, "max_position_embeddings": 32768,
        "vocab_size": 151936, "tie_word_embeddings": true, "torch_dtype": "bfloat16"})");
}
ModelSpec qwen15_7b_gptq() {
    // Qwen/Qwen1.5-7B-Chat-GPTQ-Int4: Qwen1.5-7B (MHA, 32 x 32 heads of 128) with 4-bit GPTQ, group 128.
    return from_json(R"({"model_type": "qwen2", "num_hidden_layers": 32, "hidden_size": 4096,
        "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 11008, "max_position_embeddings": 32768,
        "vocab_size": 151936, "tie_word_embeddings": false, "torch_dtype": "float16",
        "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": false, "sym": true}})");
}
ModelSpec deepseek_coder_67b() {
    // deepseek-ai/deepseek-coder-6.7b-instruct: Llama architecture, MHA.
    return from_json(R"({"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
        "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 11008, "max_position_embeddings": 16384,
        "vocab_size": 32256, "torch_dtype": "bfloat16"})");
}

CapacityInputs inputs(Engine e, Gpu g, std::int64_t max_model_len, std::int64_t tp = 1) {
    CapacityInputs in;
    in.engine = e;
    in.gpu = std::move(g);
    in.tp = tp;
    in.max_model_len = max_model_len;
    in.contexts = {max_model_len};
    return in;
}

std::map<std::string, Replay> replays() {
    std::map<std::string, Replay> r;
    {
        // RTX 3090, V0, max_model_len 20000: "Loading model weights took 14.9888 GB" (GiB),
        // "kv_cache_size=3.81GiB", "GPU blocks: 1952".
        Replay x{[] { return preset("llama-3.1-8b"); }, inputs(Engine::VllmV0, gpu("rtx-3090"), 20000)};
        x.in.mem_util = 0.9;
        x.in.weights_bytes = gib(14.9888);
        x.pool_gib = 3.81;
        x.tokens = 1952 * 16;
        x.pool_check = Replay::Pool::Within5Percent;
        r["vllm-10517-a"] = x;
        x.in = inputs(Engine::VllmV0, gpu("rtx-3090"), 29000);
        x.in.mem_util = 0.9;
        x.in.weights_bytes = gib(14.9888);
        x.pool_gib = 2.89;
        x.tokens = 1478 * 16;
        r["vllm-10517-b"] = x;
    }
    {
        // Qwen3-235B-A22B-FP8, TP 4, V1: "Available KV cache memory: 8.11 GiB", "GPU KV cache size: 178,880 tokens".
        Replay x{qwen3_235b, inputs(Engine::Vllm, gpu("h100-sxm"), 40960, 4)};
        x.pool_gib = 8.11;
        x.tokens = 178880;
        x.token_check = Replay::Tokens::AtLeast;
        x.why = "rank 0 logged 8.11 GiB; vLLM clamps every rank to the fewest blocks, and 178,880 tokens is 94 MiB less on some rank";
        r["vllm-21348-vllm"] = x;
    }
    {
        // SGLang, TP 4: "KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB": the pool
        // is K + V = 16.46 GiB, each printed to 0.01, so +-0.01 GiB.
        Replay x{qwen3_235b, inputs(Engine::Sglang, gpu("h100-sxm"), 40960, 4)};
        x.in.mem_util = 0.93;
        x.pool_gib = 16.46;
        x.half_width_gib = 0.01;
        x.tokens = 367404;
        r["vllm-21348-sglang"] = x;
    }
    {
        // Llama-2-7B, A100-80GB, utilization 0.9, "# GPU blocks: 7351" (no pool or weights logged).
        Replay x{[] { return preset("llama-2-7b"); }, inputs(Engine::VllmV0, gpu("a100-sxm-80gb"), 4096)};
        x.in.mem_util = 0.9;
        x.tokens = 7351 * 16;
        x.token_check = Replay::Tokens::None;
        x.pool_check = Replay::Pool::Within5Percent;  // against the pool the blocks imply
        x.pool_bytes = std::int64_t{7351} * 16 * 524288;
        x.why = "pool implied by 7351 blocks of 16 x 512 KiB";
        r["vllm-pr2031-llama2-7b"] = x;
    }
    {
        // Meta-Llama-3-8B (Llama-3.1-8B's shape), "total_gpu_memory 79.22GiB", "model weights take 14.96GiB",
        // "available_kv_cache_memory 53.29GiB"; max_model_len 8192.
        Gpu g = gpu_from_memory(gib(79.22), "80GB-class GPU (79.22 GiB)");
        Replay x{[] { return preset("llama-3.1-8b"); }, inputs(Engine::VllmV0, g, 8192)};
        x.in.mem_util = 0.9;
        x.in.weights_bytes = gib(14.96);
        x.pool_gib = 53.29;
        x.token_check = Replay::Tokens::None;
        x.pool_check = Replay::Pool::Within5Percent;
        r["vllm-pr10511-llama3-8b-tp1"] = x;
    }
    {
        // TensorRT-LLM v0.8, A100-80GB, a 7B Llama-2 shape, "Allocate 7GB for model",
        // "Allocate 69524783104 bytes for k/v cache", "Using 132608 tokens in paged KV cache".
        Replay x{[] { return preset("llama-2-7b"); }, inputs(Engine::Trtllm, gpu("a100-sxm-80gb"), 4096 + 1024)};
        x.in.weights_bytes = 7'000'000'000;
        x.pool_bytes = 69'524'783'104;
        x.tokens = 132608;
        x.pool_check = Replay::Pool::Within5Percent;
        r["trtllm-1400"] = x;
    }
    {
        // TensorRT-LLM, RTX A4000 16GB (not in the database: --gpu-mem 16GiB), Qwen2.5-0.5B, fp16 KV:
        // "Allocated 4.53 GiB for max tokens in paged KV cache (395776)."
        Replay x{qwen25_05b, inputs(Engine::Trtllm, gpu_from_memory(gib(16), "RTX A4000"), 32768)};
        x.in.kv_dtype = Dtype::Fp16;
        x.pool_gib = 4.53;
        x.tokens = 395776;
        x.why = "RTX A4000 is not in the database and the log gives no total, so no pool prediction";
        r["trtllm-1188"] = x;
    }
    {
        // Qwen1.5-7B-Chat-GPTQ-Int4 on an RTX 3090, vLLM 0.3 defaults, max_model_len 32768:
        // "... maximum number of tokens that can be stored in KV cache (24320)".
        Replay x{qwen15_7b_gptq, inputs(Engine::VllmV0, gpu("rtx-3090"), 32768)};
        x.in.mem_util = 0.9;
        x.tokens = 24320;
        x.token_check = Replay::Tokens::None;
        x.pool_check = Replay::Pool::PrintOnly;
        x.pool_bytes = std::int64_t{24320} * 524288;
        x.why = "no pool or weights logged; GPTQ kernels' workspace is not modelled";
        r["qwen-16"] = x;
    }
    {
        Replay x{[] { return preset("llama-2-7b"); }, inputs(Engine::VllmV0, gpu_from_memory(gib(24), "unnamed"), 4096)};
        x.tokens = 229 * 16;
        x.token_check = Replay::Tokens::None;
        x.why = "the log names no GPU and no pool; only its 229 blocks x 512 KiB (checked in kv_size_engine_logs_test)";
        r["vllm-2418"] = x;
    }
    {
        // deepseek-coder-6.7b, 2 x T4 TP 2, fp16, "# GPU blocks: 507".
        Replay x{deepseek_coder_67b, inputs(Engine::VllmV0, gpu("t4"), 16384, 2)};
        x.in.kv_dtype = Dtype::Fp16;
        x.in.weights_dtype = Dtype::Fp16;
        x.tokens = 507 * 16;
        x.token_check = Replay::Tokens::None;
        x.pool_check = Replay::Pool::PrintOnly;
        x.pool_bytes = std::int64_t{507} * 16 * 262144;
        x.why = "no pool or weights logged; the thread's run then failed, so its profile is not a clean reference";
        r["vllm-5248"] = x;
    }
    {
        // MLC on a Mali GPU: "KVCache: 10689.56 MB", max_total_sequence_length 21275 (MLC's MB are MiB).
        CapacityInputs in = inputs(Engine::Generic, gpu_from_memory(gib(16), "RK3588"), 1024);
        in.block_size = 1;
        in.kv_dtype = Dtype::Fp16;
        Replay x{[] { return preset("llama-2-7b"); }, in};
        x.pool_bytes = static_cast<std::int64_t>(std::llround(10689.56 * 1048576.0));
        x.tokens = 21275;
        x.token_check = Replay::Tokens::Mlc;
        x.why = "MLC counts 0.5% more per token than K and V (its own accounting)";
        r["mlcllm-2026"] = x;
    }
    {
        // RTX 4060 8GB (WSL): "total_gpu_memory (8.00GiB) x gpu_memory_utilization (0.70)", weights 5.20 GiB,
        // "the rest of the memory reserved for KV Cache is -1.05GiB", "# cuda blocks: 0".
        Replay x{[] { return preset("qwen2.5-7b"); }, inputs(Engine::VllmV0, gpu_from_memory(gib(8.0), "RTX 4060"), 4096)};
        x.in.mem_util = 0.7;
        x.in.weights_bytes = gib(5.2032);
        x.pool_gib = -1.05;
        x.token_check = Replay::Tokens::None;
        x.pool_check = Replay::Pool::NothingFits;
        r["vllm-13882"] = x;
    }
    return r;
}

std::vector<nlohmann::json> log_rows() {
    std::ifstream in(std::string(KVPLAN_SOURCE_DIR) + "/tests/fixtures/reference/engine_logs.jsonl");
    std::vector<nlohmann::json> rows;
    std::string line;
    while (std::getline(in, line))
        if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
    return rows;
}

std::int64_t tokens_for_pool(const Replay& x, const ModelSpec& m, std::int64_t pool) {
    CapacityInputs in = x.in;
    in.kv_pool_bytes = pool;
    return plan_capacity(m, in).kv_cache_tokens.value_or(0);
}

std::string pct(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.1f%%", v * 100);
    return buf;
}

}  // namespace

TEST_CASE("engine logs: every row of engine_logs.jsonl is replayed, and the error table is printed") {
    const auto rows = log_rows();
    REQUIRE(rows.size() == 13);
    const auto table = replays();
    std::string report = "row | engine | logged tokens | kvplan tokens from logged pool | logged pool GiB | kvplan pool GiB from GPU | pool error\n";
    for (const nlohmann::json& row : rows) {
        const std::string id = row.at("id").get<std::string>();
        INFO("row " << id);
        auto it = table.find(id);
        REQUIRE(it != table.end());  // every row has a replay
        const Replay& x = it->second;
        const ModelSpec m = x.model();
        std::string line = id + " | " + row.at("engine").get<std::string>() + " | ";
        line += x.tokens ? std::to_string(*x.tokens) : "-";
        line += " | ";

        // 1. Tokens from the logged pool.
        if (x.token_check != Replay::Tokens::None) {
            REQUIRE((x.pool_gib || x.pool_bytes));
            const std::int64_t lo = x.pool_bytes ? *x.pool_bytes : gib(*x.pool_gib - x.half_width_gib);
            const std::int64_t hi = x.pool_bytes ? *x.pool_bytes : gib(*x.pool_gib + x.half_width_gib);
            const std::int64_t mid = x.pool_bytes ? *x.pool_bytes : gib(*x.pool_gib);
            const std::int64_t t_lo = tokens_for_pool(x, m, lo), t_hi = tokens_for_pool(x, m, hi), t_mid = tokens_for_pool(x, m, mid);
            line += std::to_string(t_mid) + " (" + pct(static_cast<double>(t_mid) / static_cast<double>(*x.tokens) - 1) + ")";
            switch (x.token_check) {
                case Replay::Tokens::Exact:
                    CHECK(t_lo <= *x.tokens);
                    CHECK(*x.tokens <= t_hi);
                    break;
                case Replay::Tokens::AtLeast:
                    CHECK(t_mid >= *x.tokens);
                    CHECK(static_cast<double>(t_mid) <= 1.012 * static_cast<double>(*x.tokens));
                    break;
                case Replay::Tokens::Mlc:
                    CHECK(t_mid >= *x.tokens);
                    CHECK(static_cast<double>(t_mid) <= 1.005 * static_cast<double>(*x.tokens));
                    break;
                case Replay::Tokens::None: break;
            }
        } else {
            line += "-";
        }

        // 2. The pool from the GPU, utilization and logged weights.
        line += " | ";
        const bool has_pool = x.pool_bytes || x.pool_gib;
        const std::int64_t logged_pool = x.pool_bytes ? *x.pool_bytes : x.pool_gib ? gib(*x.pool_gib) : 0;
        char logged_text[32];
        std::snprintf(logged_text, sizeof logged_text, "%.2f", static_cast<double>(logged_pool) / kGiB);
        line += has_pool ? logged_text : "-";
        line += " | ";
        if (x.pool_check != Replay::Pool::None) {
            const CapacityPlan plan = plan_capacity(m, x.in);
            const double predicted = static_cast<double>(plan.budget.kv_pool_bytes);
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.2f", predicted / kGiB);
            line += buf;
            REQUIRE(has_pool);
            const double error = predicted / static_cast<double>(logged_pool) - 1;
            line += " | " + (x.pool_check == Replay::Pool::NothingFits ? std::string("both negative: nothing fits") : pct(error));
            if (x.pool_check == Replay::Pool::Within5Percent) CHECK(std::abs(error) <= 0.05);
            if (x.pool_check == Replay::Pool::NothingFits) {
                CHECK(plan.budget.kv_pool_bytes < 0);
                CHECK_FALSE(plan.fits);
            }
        } else {
            line += "- | -";
        }
        if (!x.why.empty()) line += "  (" + x.why + ")";
        report += line + "\n";
    }
    std::printf("%s", report.c_str());
    SUCCEED(report);
}
