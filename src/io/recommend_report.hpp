// Renders `kvplan recommend` results (table, Markdown, JSON; schema in docs/roofline.md).
#pragma once

#include <string>

#include "core/speed/recommend.hpp"

namespace kvplan {

struct RecommendResult {
    std::string model;
    RecommendInputs inputs;
    Recommendation rec;
    std::size_t top = 5;
};

// The settings a candidate assumes, as each engine's flags: vLLM's
// `vllm serve` and SGLang's `launch_server` arguments.
std::string vllm_flags(const Candidate& c);
std::string sglang_flags(const Candidate& c);

std::string render_recommend_table(const RecommendResult& r);
std::string render_recommend_markdown(const RecommendResult& r);
std::string render_recommend_json(const RecommendResult& r);

}  // namespace kvplan
