#include "core/config_reader.hpp"

#include <cmath>

#include "core/error.hpp"

namespace kvplan {

namespace {

std::string brief(const nlohmann::json& value) {
    std::string text = value.dump();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return text;
}

}  // namespace

std::string json_type_name(const nlohmann::json& value) {
    if (value.is_number_float()) return "a number with a fraction";
    if (value.is_number()) return "an integer";
    if (value.is_string()) return "a string";
    if (value.is_boolean()) return "a boolean";
    if (value.is_array()) return "an array";
    if (value.is_object()) return "an object";
    return "null";
}

ConfigReader::ConfigReader(const nlohmann::json& object, std::string source, std::string prefix)
    : object_(&object), source_(std::move(source)), prefix_(std::move(prefix)) {
    if (!object_->is_object())
        data_error(source_ + ": " + (prefix_.empty() ? std::string("top level") : prefix_.substr(0, prefix_.size() - 1)) +
                   ": expected a JSON object, found " + json_type_name(*object_));
}

std::optional<ConfigReader> ConfigReader::child(const char* name) const {
    const nlohmann::json* value = find({name});
    if (!value) return std::nullopt;
    if (!value->is_object()) fail(name, "expected an object, found " + json_type_name(*value));
    return ConfigReader(*value, source_, prefix_ + name + ".");
}

bool ConfigReader::has(const char* name) const {
    return find({name}) != nullptr;
}

bool ConfigReader::is_array(const char* name) const {
    const nlohmann::json* value = find({name});
    return value && value->is_array();
}

const nlohmann::json* ConfigReader::find(std::initializer_list<const char*> names, std::string* used) const {
    for (const char* name : names) {
        auto it = object_->find(name);
        if (it != object_->end() && !it->is_null()) {
            if (used) *used = name;
            return &*it;
        }
    }
    return nullptr;
}

std::int64_t ConfigReader::to_int(const nlohmann::json& value, const std::string& field, std::int64_t min, std::int64_t max) const {
    std::int64_t n = 0;
    if (value.is_number_integer() && !value.is_number_unsigned()) {
        n = value.get<std::int64_t>();
    } else if (value.is_number_unsigned()) {
        auto u = value.get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(max))
            fail(field, "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], found " + brief(value));
        n = static_cast<std::int64_t>(u);
    } else if (value.is_number_float()) {
        double d = value.get<double>();
        // 2^63 is exact as a double, INT64_MAX is not (it rounds up to 2^63):
        // compare against 2^63 so that no value outside int64 reaches the cast.
        constexpr double kTwo63 = 9223372036854775808.0;
        if (!std::isfinite(d) || d != std::floor(d) || d >= kTwo63 || d < -kTwo63 || d < static_cast<double>(min) || d > static_cast<double>(max))
            fail(field, "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], found " + brief(value));
        n = static_cast<std::int64_t>(d);
    } else {
        fail(field, "expected an integer, found " + json_type_name(value) + " " + brief(value));
    }
    if (n < min || n > max)
        fail(field, "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], found " + std::to_string(n));
    return n;
}

std::optional<std::int64_t> ConfigReader::get_int(std::initializer_list<const char*> names, std::int64_t min, std::int64_t max) const {
    std::string used;
    const nlohmann::json* value = find(names, &used);
    if (!value) return std::nullopt;
    return to_int(*value, used, min, max);
}

std::int64_t ConfigReader::require_int(std::initializer_list<const char*> names, std::int64_t min, std::int64_t max) const {
    auto value = get_int(names, min, max);
    if (!value) {
        std::string also;
        for (auto it = names.begin() + 1; it != names.end(); ++it) also += std::string(also.empty() ? "" : ", ") + *it;
        fail(*names.begin(), "required field is missing (expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]" +
                                 (also.empty() ? "" : "; also accepted as " + also) + ")");
    }
    return *value;
}

std::optional<double> ConfigReader::get_number(const char* name) const {
    const nlohmann::json* value = find({name});
    if (!value) return std::nullopt;
    if (!value->is_number()) fail(name, "expected a number, found " + json_type_name(*value) + " " + brief(*value));
    return value->get<double>();
}

std::optional<bool> ConfigReader::get_bool(const char* name) const {
    const nlohmann::json* value = find({name});
    if (!value) return std::nullopt;
    if (!value->is_boolean()) fail(name, "expected true or false, found " + json_type_name(*value) + " " + brief(*value));
    return value->get<bool>();
}

std::optional<std::string> ConfigReader::get_string(const char* name) const {
    const nlohmann::json* value = find({name});
    if (!value) return std::nullopt;
    if (!value->is_string()) fail(name, "expected a string, found " + json_type_name(*value) + " " + brief(*value));
    return value->get<std::string>();
}

std::optional<std::vector<std::string>> ConfigReader::get_string_list(const char* name) const {
    const nlohmann::json* value = find({name});
    if (!value) return std::nullopt;
    if (!value->is_array()) fail(name, "expected an array of strings, found " + json_type_name(*value));
    std::vector<std::string> out;
    for (std::size_t i = 0; i < value->size(); ++i) {
        const auto& item = (*value)[i];
        if (!item.is_string()) fail(std::string(name) + "[" + std::to_string(i) + "]", "expected a string, found " + json_type_name(item));
        out.push_back(item.get<std::string>());
    }
    return out;
}

std::optional<std::vector<std::int64_t>> ConfigReader::get_int_list(const char* name, std::int64_t min, std::int64_t max) const {
    const nlohmann::json* value = find({name});
    if (!value) return std::nullopt;
    if (!value->is_array()) fail(name, "expected an array of integers, found " + json_type_name(*value));
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i < value->size(); ++i) out.push_back(to_int((*value)[i], std::string(name) + "[" + std::to_string(i) + "]", min, max));
    return out;
}

std::vector<std::int64_t> ConfigReader::require_int_list(const char* name, std::int64_t min, std::int64_t max) const {
    auto list = get_int_list(name, min, max);
    if (!list)
        fail(name, "required field is missing or null (expected an array of integers in [" + std::to_string(min) + ", " + std::to_string(max) + "])");
    return *list;
}

void ConfigReader::fail_relation(const std::string& field, const std::string& message) const {
    data_error(where(field) + " " + message);
}

std::string ConfigReader::where(const std::string& field) const {
    return source_ + ": " + prefix_ + field;
}

void ConfigReader::fail(const std::string& field, const std::string& message) const {
    data_error(where(field) + ": " + message);
}

}  // namespace kvplan
