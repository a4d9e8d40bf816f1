// The published measurements of tests/fixtures/reference/decode_measurements.jsonl
// (a verbatim copy of shared/reference/decode_measurements.jsonl) as inputs
// to the step-cost model: which preset, device, format, TP and engine each
// row ran, and how its figure is predicted (docs/accuracy.md, "How each row
// is predicted"). Shared by the accuracy tables and the profile fit.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/speed/engine_profile.hpp"
#include "core/speed/step_cost.hpp"

namespace kvplan::test {

struct AccuracyRow {
    std::string id, category, unit, source, engine;  // engine: the profile that prices it
    double measured = 0;
    std::string setup;  // "rtx-4090 x1, q4_k_m" for the table
    std::string why;    // not predicted (or a remark beside the error)
    bool predictable = false;
    // The model inputs, when predictable.
    std::shared_ptr<const ModelSpec> model;
    Gpu gpu;
    WeightFormat format;
    std::optional<Dtype> kv;
    std::int64_t tp = 1, gpus = 1, batch = 1, input = 0, output = 0;
    bool per_gpu = false;  // a throughput per GPU
    bool moe = false;
};

// Every row of the file, in file order.
const std::vector<AccuracyRow>& accuracy_rows();

// The row's figure, predicted with `profile` (its unit).
double predict_row(const AccuracyRow& row, const EngineProfile& profile);

// The bundled profile that prices `row` (generic for rows of engines without one).
const EngineProfile& row_profile(const AccuracyRow& row);

}  // namespace kvplan::test
