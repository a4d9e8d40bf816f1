#include "report/diff_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/checked.hpp"
#include "core/gate/baseline.hpp"
#include "core/units.hpp"
#include "report/check_report.hpp"
#include "report/json_value.hpp"
#include "report/printable.hpp"
#include "report/table.hpp"

namespace kvplan {

namespace {

// B - A, as the row's kind prints it.
std::string delta_text(const DiffRow& r) {
    if (!r.a.has_number() || !r.b.has_number()) return r.a == r.b ? "0" : "n/a";
    if (r.a.state == FigureValue::State::Integer) {
        const Int128 d = static_cast<Int128>(r.b.integer) - r.a.integer;
        if (d == 0) return "0";
        const std::int64_t magnitude = static_cast<std::int64_t>(d < 0 ? -d : d);
        return (d < 0 ? "-" : "+") + group_digits(magnitude);
    }
    const double d = r.b.real - r.a.real;
    return d == 0 ? "0" : fmt::format("{:+.4g}", d);
}

std::optional<double> fraction(const DiffRow& r) {
    if (!r.a.has_number() || !r.b.has_number()) return std::nullopt;
    const double a = r.a.state == FigureValue::State::Integer ? static_cast<double>(r.a.integer) : r.a.real;
    const double b = r.b.state == FigureValue::State::Integer ? static_cast<double>(r.b.integer) : r.b.real;
    if (a == 0) return std::nullopt;
    return (b - a) / a;
}

std::string percent_text(const DiffRow& r) {
    if (r.a == r.b) return "0";
    auto f = fraction(r);
    return f ? fmt::format("{:+.1f}%", *f * 100.0) : "n/a";
}

// For serving, from A to B.
std::string direction(const DiffRow& r) {
    if (r.a == r.b) return "same";
    if (!r.a.has_number() || !r.b.has_number()) return "changed";
    const double a = r.a.state == FigureValue::State::Integer ? static_cast<double>(r.a.integer) : r.a.real;
    const double b = r.b.state == FigureValue::State::Integer ? static_cast<double>(r.b.integer) : r.b.real;
    return (b > a) == (r.better == Better::Higher) ? "better" : "worse";
}

std::string value_text(const DiffRow& r, const FigureValue& v) {
    std::string text = figure_value_text(v);
    if (r.bytes && v.state == FigureValue::State::Integer) text += " (" + binary_size(v.integer) + ")";
    return text;
}

std::string label_text(const DiffRow& r) {
    return r.unit.empty() ? r.label : r.label + " (" + r.unit + ")";
}

// A bytes figure in binary units alone: the fitted table's cell names its unit.
std::string fit_value_text(const DiffRow& r, const FigureValue& v) {
    return r.bytes && v.state == FigureValue::State::Integer ? binary_size(v.integer) : figure_value_text(v);
}

std::string heading(const DiffResult& d, Width width) {
    return fit_line("A: " + d.label_a, width, "", "   ") + fit_line("B: " + d.label_b, width, "", "   ") +
           fit_line("both: " + d.setting, width, "", "      ");
}

std::string notes_text(const DiffResult& d, Width width) {
    std::string out;
    for (const std::string& n : d.notes) out += fit_line("note: " + n, width, "", "  ");
    return out;
}

}  // namespace

// Wide (and Markdown): every column, bytes exact with GiB beside them. Fitted
// to 100 columns: bytes in binary units alone (the cell names its unit, so the
// label need not), and no B - A: the change says it in percent. JSON: the
// figure by its key (its unit in the key) and the values as numbers.
const Fields<DiffRow>& diff_row_fields() {
    using J = nlohmann::ordered_json;
    using R = DiffRow;
    static const Fields<R> fields = {
        {.key = "figure",
         .json = [](const R& r) { return J(r.key); },
         .header = "figure",
         .cell = label_text,
         .fit_cell = [](const R& r) { return r.bytes ? r.label : label_text(r); }},
        {.key = "context_tokens", .kind = FieldKind::Number, .json = [](const R& r) { return or_null(r.context_tokens); }},
        {.key = "a",
         .kind = FieldKind::Number,
         .json = [](const R& r) { return figure_value_json(r.a); },
         .header = "A",
         .cell = [](const R& r) { return value_text(r, r.a); },
         .fit_cell = [](const R& r) { return fit_value_text(r, r.a); }},
        {.key = "b",
         .kind = FieldKind::Number,
         .json = [](const R& r) { return figure_value_json(r.b); },
         .header = "B",
         .cell = [](const R& r) { return value_text(r, r.b); },
         .fit_cell = [](const R& r) { return fit_value_text(r, r.b); }},
        {.header = "B - A", .cell = delta_text, .in_fit = false},
        {.key = "change_fraction",
         .kind = FieldKind::Number,
         .json = [](const R& r) { return or_null(fraction(r)); },
         .header = "change",
         .cell = percent_text},
        {.key = "for_serving",
         .json = [](const R& r) { return J(direction(r)); },
         .header = "for serving",
         .cell = direction,
         .fit_header = "for\nserving"},
    };
    return fields;
}

std::string render_diff_table(const DiffResult& d, Width width) {
    std::string out = heading(d, width) + "\n";
    const Table t = fields_table(diff_row_fields(), d.rows, 1, width);
    if (width == Width::Wide) out += t.render_text(Width::Wide);
    else out += t.render_text() + "\nExact bytes and B - A: --wide; every figure by key: --json.\n";
    return out + (d.notes.empty() ? "" : "\n" + notes_text(d, width));
}

std::string render_diff_markdown(const DiffResult& d) {
    std::string out = fmt::format("**A**: {}  \n**B**: {}  \nboth: {}\n\n", printable(d.label_a), printable(d.label_b), printable(d.setting));
    out += fields_table(diff_row_fields(), d.rows, 1).render_markdown();
    for (const std::string& n : d.notes) out += "\n> " + printable(n) + "\n";
    return out;
}

std::string render_diff_json(const DiffResult& d) {
    nlohmann::ordered_json j;
    j["a"] = d.label_a;
    j["b"] = d.label_b;
    j["setting"] = d.setting;
    j["rows"] = nlohmann::ordered_json::array();
    for (const DiffRow& r : d.rows) j["rows"].push_back(fields_json(diff_row_fields(), r));
    j["notes"] = d.notes;
    return json_text(j);
}

}  // namespace kvplan
