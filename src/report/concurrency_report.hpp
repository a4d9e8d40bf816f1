// Renders `kvplan concurrency` results: the budget, the overhead terms, one
// row per context, the answer in words and the engine's log lines (table,
// Markdown, CSV, JSON; schema in docs/concurrency.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/memory/capacity.hpp"
#include "core/memory/concurrency_result.hpp"
#include "core/model/model_spec.hpp"
#include "report/table.hpp"

namespace kvplan {

// "At 4,096 tokens one NVIDIA H100 SXM 80GB holds 103 requests of llama-3.1-8b; at 32,768, 12."
std::string answer_sentence(const ConcurrencyResult& r);

// Fitted to 100 columns unless `width` is Wide (`--wide`: the overhead basis as a column, lines unwrapped).
std::string render_concurrency_table(const ConcurrencyResult& r, Width width = Width::Fit);
std::string render_concurrency_markdown(const ConcurrencyResult& r);
std::string render_concurrency_csv(const ConcurrencyResult& r);
std::string render_concurrency_json(const ConcurrencyResult& r);

// `concurrency --vllm-version list`: the releases kvplan knows and what each
// one's start-up subtracts (core/memory/vllm_release.hpp).
std::string render_vllm_releases();

}  // namespace kvplan
