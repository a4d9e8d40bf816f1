// A plain table of strings, rendered as aligned text or as Markdown. Printers
// build one Table from their field list and render it in the format asked for.
#pragma once

#include <string>
#include <vector>

namespace kvplan {

class Table {
public:
    // The first `text_columns` columns hold text and are left-aligned; the
    // rest hold numbers and are right-aligned.
    explicit Table(std::vector<std::string> headers, std::size_t text_columns = 1)
        : headers_(std::move(headers)), text_columns_(text_columns) {}
    void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

    // Columns padded to their widest cell.
    std::string render_text() const;
    std::string render_markdown() const;
    // RFC 4180: comma-separated, cells with commas or quotes quoted.
    std::string render_csv() const;

private:
    std::vector<std::string> headers_;
    std::vector<std::vector<std::string>> rows_;
    std::size_t text_columns_;
};

// `text` broken at spaces into lines of at most `width` columns (a longer
// word stays whole), the first line prefixed by `first`, the rest by `rest`;
// every line ends with a newline.
std::string wrap_text(const std::string& text, std::size_t width, const std::string& first = "", const std::string& rest = "");

}  // namespace kvplan
