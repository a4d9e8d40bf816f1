// SLO-driven search: GPU type x TP degree x batch, keeping the
// configurations that meet a time-to-first-token and a time-per-output-token
// target and fit in memory, ranked by throughput per GPU (or by cost per
// million tokens when prices are known).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/hardware.hpp"
#include "core/model/model_spec.hpp"
#include "core/speed/step_cost.hpp"
#include "core/model/weight_format.hpp"

namespace kvplan {

struct RecommendInputs {
    const ModelSpec* model = nullptr;
    std::vector<Gpu> gpus;              // the devices to consider
    std::int64_t context = 8192;        // max_model_len: the longest request
    std::int64_t prompt = 0;            // tokens prefilled for TTFT (0: context - output)
    std::int64_t output = 256;
    double ttft_s = 1.0;                // targets
    double tpot_s = 0.05;
    std::int64_t max_gpus = 8;          // TP degrees 1, 2, 4, 8 up to this
    std::map<std::string, double> prices;  // gpu id -> USD per GPU-hour
    WeightFormat weights;
    std::optional<Dtype> kv_dtype;
    Efficiency efficiency;
};

struct Candidate {
    std::string gpu;
    std::int64_t tp = 1;
    std::int64_t batch = 1;             // concurrent sequences that still meet the TPOT target
    std::int64_t max_requests = 0;      // what memory holds at the context
    double ttft_s = 0;
    double tpot_s = 0;                  // decode step at `batch` and the full context
    double tokens_per_s_per_gpu = 0;
    std::optional<double> usd_per_million_tokens;
    // The engine settings the plan assumes; the printer writes them as each
    // engine's flags (src/io/recommend_report.cpp, vllm_flags/sglang_flags).
    std::int64_t max_model_len = 0;
    Dtype kv_dtype = Dtype::Bf16;
    double vllm_mem_fraction = 0.9;    // --gpu-memory-utilization
    double sglang_mem_fraction = 0.9;  // --mem-fraction-static (SGLang's default for this TP)
};

struct Recommendation {
    std::vector<Candidate> candidates;  // every configuration that meets both targets, best first
    std::int64_t configurations = 0;    // GPU x TP pairs tried
    std::int64_t fitting = 0;           // ... that hold at least one request
    // When nothing meets both targets: which one binds ("ttft", "tpot", "both",
    // "memory", or "separately" when each is met but never together), and the
    // closest configurations for each.
    std::string binding;
    std::optional<Candidate> best_ttft;
    std::optional<Candidate> best_tpot;
    std::vector<std::string> notes;
};

// Throws Error(Usage) for non-positive targets or a prompt beyond the context.
Recommendation recommend(const RecommendInputs& in);

}  // namespace kvplan
