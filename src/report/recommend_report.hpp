// Renders `kvplan recommend` results (table, Markdown, JSON, CSV; schema in
// docs/roofline.md) and the engine commands each candidate stands for.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/speed/recommend.hpp"
#include "core/speed/recommend_result.hpp"
#include "io/model_loader.hpp"
#include "report/engine_commands.hpp"
#include "report/fields.hpp"

namespace kvplan {

// The engine flags for the checkpoint (its id, a quantization on load) and,
// as comments, why the analytic search's settings differ from vLLM's defaults.
ServeOptions serve_options(const RecommendResult& r);
// Why a candidate's vLLM settings differ from vLLM's defaults on its device,
// one sentence each: the batch the TPOT target (or memory) allows, the token
// budget that prefills a whole prompt in one step.
std::vector<std::string> analytic_reasons(const RecommendResult& r, const Candidate& c);

// One configuration of the analytic search as its tables and CSV see it: a
// candidate (rank 1 the best) or a rejected one (rank 0).
struct RecommendRow {
    const RecommendResult* result = nullptr;
    const Candidate* candidate = nullptr;
    std::size_t rank = 0;
};
// The candidates table's columns (the 100-column table's shorter headings,
// --wide's and Markdown's GPUs and token budget) and the CSV's keys.
const Fields<RecommendRow>& recommend_fields();

std::string render_recommend_table(const RecommendResult& r);
std::string render_recommend_markdown(const RecommendResult& r);
std::string render_recommend_json(const RecommendResult& r);
std::string render_recommend_csv(const RecommendResult& r);

}  // namespace kvplan
