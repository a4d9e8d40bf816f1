// One field list per result row: each field of a row says once how the table
// shows it (heading, cell text) and how the JSON holds it (key, value), so the
// table, Markdown and JSON of a row are rendered from one list and cannot drift
// apart, as llama-bench's printers do (llama.cpp, examples/llama-bench:
// test::get_fields() and one printer per format walking it). A field with no
// heading is JSON-only, one with no key table-only, so that a printer keeps its
// output byte for byte while its row moves into a list.
//
// tests/report/fields_test.cpp walks every list (all_field_lists) and checks
// the unit rule of docs/style.md: a numeric JSON key names its unit.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/table.hpp"

namespace kvplan {

// What a field's JSON value is, for the unit rule: numbers (one, or an
// object or array of them) must name their unit; text and flags need not.
enum class FieldKind { Text, Flag, Number, Numbers };

template <typename Row>
struct Field {
    std::string key{};  // the JSON member; "" for a table-only column
    FieldKind kind = FieldKind::Text;
    std::function<nlohmann::ordered_json(const Row&)> json{};
    std::string header{};  // the table's column heading (may hold '\n', see Table); "" for a JSON-only member
    std::function<std::string(const Row&)> cell{};
    // The 100-column table's own heading and cell, where it words the field
    // shorter (units once in the heading); empty: the same as header and cell.
    std::string fit_header{};
    std::function<std::string(const Row&)> fit_cell{};
    bool in_fit = true;  // false: only the wide table and Markdown show it
};

template <typename Row>
using Fields = std::vector<Field<Row>>;

// The table of `rows`: every field with a heading, in the list's order; Fit
// takes the fitted heading and cell and leaves out the fields not in_fit.
template <typename Row>
Table fields_table(const Fields<Row>& fields, const std::vector<Row>& rows, std::size_t text_columns, Width width = Width::Wide) {
    auto shown = [&](const Field<Row>& f) { return !f.header.empty() && (width == Width::Wide || f.in_fit); };
    const bool fit = width == Width::Fit;
    std::vector<std::string> headers;
    for (const Field<Row>& f : fields)
        if (shown(f)) headers.push_back(fit && !f.fit_header.empty() ? f.fit_header : f.header);
    Table t(std::move(headers), text_columns);
    for (const Row& row : rows) {
        std::vector<std::string> cells;
        for (const Field<Row>& f : fields)
            if (shown(f)) cells.push_back(fit && f.fit_cell ? f.fit_cell(row) : f.cell(row));
        t.add(std::move(cells));
    }
    return t;
}

// The JSON object of one row: every field with a key, in the list's order.
template <typename Row>
nlohmann::ordered_json fields_json(const Fields<Row>& fields, const Row& row) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const Field<Row>& f : fields)
        if (!f.key.empty()) j[f.key] = f.json(row);
    return j;
}

// A JSON value as one CSV cell: text as it is, null empty, a flag as
// true/false, a number (or an object or array) as its JSON text.
inline std::string csv_value(const nlohmann::ordered_json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_null()) return "";
    return v.dump();
}

// The CSV table of `rows`: one column per field with a key, the key (which
// names its unit) as the heading and the JSON value as the cell, so that a
// spreadsheet reads the same figures and units as the JSON.
template <typename Row>
Table fields_csv_table(const Fields<Row>& fields, const std::vector<Row>& rows) {
    std::vector<std::string> headers;
    for (const Field<Row>& f : fields)
        if (!f.key.empty()) headers.push_back(f.key);
    Table t(std::move(headers));
    for (const Row& row : rows) {
        std::vector<std::string> cells;
        for (const Field<Row>& f : fields)
            if (!f.key.empty()) cells.push_back(csv_value(f.json(row)));
        t.add(std::move(cells));
    }
    return t;
}

// A list as the unit rule's test reads it: its name, and each JSON key with its kind.
struct FieldListInfo {
    std::string name;
    std::vector<std::pair<std::string, FieldKind>> keys;
};

template <typename Row>
FieldListInfo describe_fields(std::string name, const Fields<Row>& fields) {
    FieldListInfo out{std::move(name), {}};
    for (const Field<Row>& f : fields)
        if (!f.key.empty()) out.keys.emplace_back(f.key, f.kind);
    return out;
}

// Every printer's field lists (report/fields.cpp names them).
std::vector<FieldListInfo> all_field_lists();

}  // namespace kvplan
