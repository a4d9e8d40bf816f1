// Typed, named access to the fields of a config.json that has already been
// read and parsed. Every lookup knows the field's full path (e.g.
// "text_config.num_key_value_heads"), so every error names the file, the
// field, what was expected and what was found. JSON null counts as absent
// (configs write "sliding_window": null to mean "no window").
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvplan {

class ConfigReader {
public:
    // `source` names the file in messages; `prefix` is the path of `object`
    // inside it ("" for the top level, "text_config." for a nested config).
    ConfigReader(const nlohmann::json& object, std::string source, std::string prefix = "");

    // A reader for a nested object (e.g. text_config), or nullopt if absent.
    std::optional<ConfigReader> child(const char* name) const;

    bool has(const char* name) const;
    bool is_array(const char* name) const;

    // The first of `names` present (not null); returns the name used in `*used`.
    const nlohmann::json* find(std::initializer_list<const char*> names, std::string* used = nullptr) const;

    // Integers in [min, max]; a float with an integral value is accepted.
    std::optional<std::int64_t> get_int(std::initializer_list<const char*> names, std::int64_t min, std::int64_t max) const;
    std::int64_t require_int(std::initializer_list<const char*> names, std::int64_t min, std::int64_t max) const;

    std::optional<double> get_number(const char* name) const;
    std::optional<bool> get_bool(const char* name) const;
    std::optional<std::string> get_string(const char* name) const;
    std::optional<std::vector<std::string>> get_string_list(const char* name) const;
    std::optional<std::vector<std::int64_t>> get_int_list(const char* name, std::int64_t min, std::int64_t max) const;
    // The list, or an error naming the field when it is missing or null.
    std::vector<std::int64_t> require_int_list(const char* name, std::int64_t min, std::int64_t max) const;

    // "file.json: text_config.num_key_value_heads" style names for messages.
    std::string where(const std::string& field) const;
    const std::string& source() const { return source_; }
    const std::string& prefix() const { return prefix_; }

    // Throws a data error: "<source>: <prefix><field>: <message>".
    [[noreturn]] void fail(const std::string& field, const std::string& message) const;
    // Throws a data error about a relation between fields, read as a sentence:
    // "<source>: <prefix><field> <message>", e.g. "... num_key_value_heads (3) must divide ...".
    [[noreturn]] void fail_relation(const std::string& field, const std::string& message) const;

private:
    std::int64_t to_int(const nlohmann::json& value, const std::string& field, std::int64_t min, std::int64_t max) const;

    const nlohmann::json* object_;
    std::string source_;
    std::string prefix_;
};

// How JSON names a value's type in messages ("string", "array", ...).
std::string json_type_name(const nlohmann::json& value);

}  // namespace kvplan
