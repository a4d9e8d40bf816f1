#include "io/table.hpp"

#include <algorithm>

#include "io/printable.hpp"

namespace kvplan {

namespace {

// Every cell as it will be printed: control characters escaped (io/printable.hpp).
std::vector<std::string> printable_row(const std::vector<std::string>& row) {
    std::vector<std::string> out;
    out.reserve(row.size());
    for (const std::string& cell : row) out.push_back(printable(cell));
    return out;
}

}  // namespace

std::string Table::render_text() const {
    const std::vector<std::string> headers = printable_row(headers_);
    std::vector<std::vector<std::string>> rows;
    for (const auto& row : rows_) rows.push_back(printable_row(row));
    std::vector<std::size_t> width(headers.size(), 0);
    auto measure = [&](const std::vector<std::string>& row) {
        for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());
    };
    measure(headers);
    for (const auto& row : rows) measure(row);
    auto line = [&](const std::vector<std::string>& row) {
        std::string out = " ";
        for (std::size_t c = 0; c < width.size(); ++c) {
            std::string cell = c < row.size() ? row[c] : "";
            std::string pad(width[c] - cell.size(), ' ');
            out += " " + (c < text_columns_ ? cell + pad : pad + cell) + " ";
        }
        while (!out.empty() && out.back() == ' ') out.pop_back();
        return out + "\n";
    };
    std::string out = line(headers);
    std::size_t total = 1;
    for (std::size_t w : width) total += w + 2;
    out += "  " + std::string(total - 2, '-') + "\n";
    for (const auto& row : rows) out += line(row);
    return out;
}

std::string Table::render_markdown() const {
    auto line = [](const std::vector<std::string>& row) {
        std::string out = "|";
        for (const auto& cell : row) out += " " + printable(cell) + " |";
        return out + "\n";
    };
    std::string out = line(headers_);
    out += "|";
    for (std::size_t c = 0; c < headers_.size(); ++c) out += c == 0 ? " --- |" : " ---: |";
    out += "\n";
    for (const auto& row : rows_) out += line(row);
    return out;
}

std::string Table::render_csv() const {
    auto cell = [](const std::string& c) {
        if (c.find_first_of(",\"\n") == std::string::npos) return c;
        std::string out = "\"";
        for (char ch : c) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        return out + "\"";
    };
    auto line = [&](const std::vector<std::string>& row) {
        std::string out;
        for (std::size_t c = 0; c < row.size(); ++c) out += (c ? "," : "") + cell(row[c]);
        return out + "\n";
    };
    std::string out = line(headers_);
    for (const auto& row : rows_) out += line(row);
    return out;
}

std::string wrap_text(const std::string& text, std::size_t width, const std::string& first, const std::string& rest) {
    std::string out, line = first;
    bool empty = true;  // no word on this line yet
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(' ', start);
        if (end == std::string::npos) end = text.size();
        const std::string word = text.substr(start, end - start);
        if (!empty && line.size() + 1 + word.size() > width) {
            out += line + "\n";
            line = rest;
            empty = true;
        }
        line += (empty ? "" : " ") + word;
        empty = false;
        start = end + 1;
    }
    return out + line + "\n";
}

}  // namespace kvplan
