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

std::string render_recommend_table(const RecommendResult& r);
std::string render_recommend_markdown(const RecommendResult& r);
std::string render_recommend_json(const RecommendResult& r);

}  // namespace kvplan
