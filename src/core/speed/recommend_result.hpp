// What `kvplan recommend` (the analytic search) computes (printed by
// report/recommend_report.hpp).
#pragma once

#include <cstddef>
#include <string>

#include "core/model/served_model.hpp"
#include "core/speed/recommend.hpp"

namespace kvplan {

struct RecommendResult {
    std::string model;
    ServedModel served;  // what the engine commands name; an empty id: a hand-built model
    RecommendInputs inputs;
    Recommendation rec;
    std::size_t top = 5;
    bool wide = false;  // every column and every rejected configuration, commands unwrapped
};

}  // namespace kvplan
