#include "report/diff_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/checked.hpp"
#include "core/gate/baseline.hpp"
#include "core/units.hpp"
#include "report/check_report.hpp"
#include "report/json_value.hpp"
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

// Wide (and Markdown): every column, bytes exact with GiB beside them.
Table diff_table(const DiffResult& d) {
    Table t({"figure", "A", "B", "B - A", "change", "for serving"}, 1);
    for (const DiffRow& r : d.rows) t.add({label_text(r), value_text(r, r.a), value_text(r, r.b), delta_text(r), percent_text(r), direction(r)});
    return t;
}

// Fitted to 100 columns: bytes in binary units alone (the cell names its
// unit, so the label need not), and no B - A: the change says it in percent.
Table fit_diff_table(const DiffResult& d) {
    Table t({"figure", "A", "B", "change", "for\nserving"}, 1);
    auto value = [](const DiffRow& r, const FigureValue& v) {
        return r.bytes && v.state == FigureValue::State::Integer ? binary_size(v.integer) : figure_value_text(v);
    };
    for (const DiffRow& r : d.rows) t.add({r.bytes ? r.label : label_text(r), value(r, r.a), value(r, r.b), percent_text(r), direction(r)});
    return t;
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

std::string render_diff_table(const DiffResult& d, Width width) {
    std::string out = heading(d, width) + "\n";
    if (width == Width::Wide) out += diff_table(d).render_text(Width::Wide);
    else out += fit_diff_table(d).render_text() + "\nExact bytes and B - A: --wide; every figure by key: --json.\n";
    return out + (d.notes.empty() ? "" : "\n" + notes_text(d, width));
}

std::string render_diff_markdown(const DiffResult& d) {
    std::string out = fmt::format("**A**: {}  \n**B**: {}  \nboth: {}\n\n", d.label_a, d.label_b, d.setting);
    out += diff_table(d).render_markdown();
    for (const std::string& n : d.notes) out += "\n> " + n + "\n";
    return out;
}

std::string render_diff_json(const DiffResult& d) {
    nlohmann::ordered_json j;
    j["a"] = d.label_a;
    j["b"] = d.label_b;
    j["setting"] = d.setting;
    j["rows"] = nlohmann::ordered_json::array();
    for (const DiffRow& r : d.rows) {
        nlohmann::ordered_json o;
        o["figure"] = r.key;
        o["context_tokens"] = or_null(r.context_tokens);
        o["a"] = figure_value_json(r.a);
        o["b"] = figure_value_json(r.b);
        auto f = fraction(r);
        o["change_fraction"] = or_null(f);
        o["for_serving"] = direction(r);
        j["rows"].push_back(o);
    }
    j["notes"] = d.notes;
    return j.dump(2) + "\n";
}

}  // namespace kvplan
