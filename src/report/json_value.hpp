// JSON printers write an absent optional figure as null, never as a made-up
// number, and print a document through json_text: helpers for every report.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kvplan {

template <typename T>
nlohmann::ordered_json or_null(const std::optional<T>& value) {
    return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

// A report's JSON, indented by 2, ending in a newline. Strings are escaped by
// the JSON library (RFC 8259: control characters as \u00XX); DEL, which JSON
// lets through raw, is written \u007f too, so that a name's control
// characters never reach a terminal (docs/errors.md, "Printing what users
// gave"), and bytes that are not UTF-8 (a folder's name) become U+FFFD
// instead of an exception.
inline std::string json_text(const nlohmann::ordered_json& j) {
    std::string out;
    for (char c : j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)) {
        // 0x7f appears only inside strings: JSON's own syntax is printable ASCII.
        if (c == '\x7f') out += "\\u007f";
        else out += c;
    }
    return out + "\n";
}

}  // namespace kvplan
