// JSON printers write an absent optional figure as null, never as a made-up
// number: one helper for every report.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

namespace kvplan {

template <typename T>
nlohmann::ordered_json or_null(const std::optional<T>& value) {
    return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

}  // namespace kvplan
