#include "report/table.hpp"

#include <algorithm>

#include "report/display_width.hpp"
#include "report/printable.hpp"

namespace kvplan {

namespace {

// Every cell as it will be printed: control characters escaped (report/printable.hpp).
std::vector<std::string> printable_row(const std::vector<std::string>& row) {
    std::vector<std::string> out;
    out.reserve(row.size());
    for (const std::string& cell : row) out.push_back(printable(cell));
    return out;
}

// The header as rows of text: a header holding '\n' takes one line per part,
// bottom-aligned, so that a long heading can stack instead of widening its column.
std::vector<std::vector<std::string>> header_lines(const std::vector<std::string>& headers) {
    std::vector<std::vector<std::string>> parts;
    std::size_t height = 1;
    for (const std::string& h : headers) {
        std::vector<std::string> lines;
        for (std::size_t start = 0;;) {
            const std::size_t end = h.find('\n', start);
            lines.push_back(printable(h.substr(start, end == std::string::npos ? std::string::npos : end - start)));
            if (end == std::string::npos) break;
            start = end + 1;
        }
        height = std::max(height, lines.size());
        parts.push_back(std::move(lines));
    }
    std::vector<std::vector<std::string>> out(height, std::vector<std::string>(headers.size()));
    for (std::size_t c = 0; c < parts.size(); ++c)
        for (std::size_t i = 0; i < parts[c].size(); ++i) out[height - parts[c].size() + i][c] = parts[c][i];
    return out;
}

// A header as one line, for the formats that have no stacked headers.
std::string one_line(const std::string& header) {
    std::string out;
    for (char c : header) {
        if (c != '\n') out += c;
        else if (out.empty() || out.back() != '/') out += ' ';
    }
    return out;
}

}  // namespace

std::string Table::render_text(Width fit) const {
    std::vector<std::string> one;
    for (const std::string& h : headers_) one.push_back(one_line(h));
    const std::vector<std::vector<std::string>> headers = header_lines(fit == Width::Fit ? headers_ : one);
    std::vector<std::vector<std::string>> rows;
    for (const auto& row : rows_) rows.push_back(printable_row(row));
    std::vector<std::size_t> width(headers_.size(), 0);
    auto measure = [&](const std::vector<std::string>& row) {
        for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], display_width(row[c]));
    };
    for (const auto& row : headers) measure(row);
    for (std::size_t r = 0; r < rows.size(); ++r)
        if (!heading_[r]) measure(rows[r]);
    auto line = [&](const std::vector<std::string>& row) {
        std::string out = " ";
        for (std::size_t c = 0; c < width.size(); ++c) {
            std::string cell = c < row.size() ? row[c] : "";
            std::string pad(width[c] - display_width(cell), ' ');
            out += " " + (c < text_columns_ ? cell + pad : pad + cell) + " ";
        }
        while (!out.empty() && out.back() == ' ') out.pop_back();
        return out + "\n";
    };
    std::string out;
    for (const auto& row : headers) out += line(row);
    std::size_t total = 1;
    for (std::size_t w : width) total += w + 2;
    out += "  " + std::string(total - 2, '-') + "\n";
    for (std::size_t r = 0; r < rows.size(); ++r) out += heading_[r] ? "  " + rows[r][0] + "\n" : line(rows[r]);
    return out;
}

std::string Table::render_markdown() const {
    auto line = [](const std::vector<std::string>& row) {
        std::string out = "|";
        for (const auto& cell : row) out += " " + markdown_cell(cell) + " |";
        return out + "\n";
    };
    std::vector<std::string> headers;
    for (const std::string& h : headers_) headers.push_back(one_line(h));
    std::string out = line(headers);
    out += "|";
    for (std::size_t c = 0; c < headers_.size(); ++c) out += c == 0 ? " --- |" : " ---: |";
    out += "\n";
    for (const auto& row : rows_) out += line(row);
    return out;
}

std::string Table::render_csv() const {
    auto line = [&](const std::vector<std::string>& row) {
        std::string out;
        for (std::size_t c = 0; c < row.size(); ++c) out += (c ? "," : "") + csv_cell(row[c]);
        return out + "\n";
    };
    std::vector<std::string> headers;
    for (const std::string& h : headers_) headers.push_back(one_line(h));
    std::string out = line(headers);
    for (const auto& row : rows_) out += line(row);
    return out;
}

std::string wrap_text(const std::string& raw, std::size_t width, const std::string& first, const std::string& rest) {
    const std::string text = printable(raw);
    std::string out, line = first;
    bool empty = true;  // no word on this line yet
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(' ', start);
        if (end == std::string::npos) end = text.size();
        const std::string word = text.substr(start, end - start);
        if (!empty && display_width(line) + 1 + display_width(word) > width) {
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

std::string fit_line(const std::string& text, Width width, const std::string& first, const std::string& rest) {
    return width == Width::Wide ? first + printable(text) + "\n" : wrap_text(text, kFitColumns, first, rest);
}

}  // namespace kvplan
