// A plain table of strings, rendered as aligned text or as Markdown. Printers
// build one Table from their field list and render it in the format asked for.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/output_width.hpp"

namespace kvplan {

// Default text output fits this many display cells (a terminal, a CI log, a
// review comment); `--wide` prints every column at full width instead.
inline constexpr std::size_t kFitColumns = 100;

class Table {
public:
    // The first `text_columns` columns hold text and are left-aligned; the
    // rest hold numbers and are right-aligned. A header may hold '\n' where
    // it may break: the fitted text table stacks its parts (bottom-aligned) to
    // keep a column narrow; the wide text table, Markdown and CSV print it on
    // one line, the parts joined by a space, or by nothing after a '/'
    // ("reserved/\nrequest" is "reserved/request").
    explicit Table(std::vector<std::string> headers, std::size_t text_columns = 1) : headers_(std::move(headers)), text_columns_(text_columns) {}
    void add(std::vector<std::string> row) {
        rows_.push_back(std::move(row));
        heading_.push_back(false);
    }
    // A line that heads the rows after it (check's scenario name): in the text
    // table it spans the columns and does not widen the first; in Markdown and
    // CSV it is a row with the text in the first cell.
    void add_heading(std::string text) {
        rows_.push_back({std::move(text)});
        heading_.push_back(true);
    }

    // Columns padded to their widest cell, measured in display cells.
    std::string render_text(Width width = Width::Fit) const;
    // Every cell and header through markdown_cell (report/printable.hpp).
    std::string render_markdown() const;
    // RFC 4180: comma-separated, every cell through csv_cell (report/printable.hpp).
    std::string render_csv() const;

private:
    std::vector<std::string> headers_;
    std::vector<std::vector<std::string>> rows_;
    std::vector<bool> heading_;  // per row: an add_heading line
    std::size_t text_columns_;
};

// `text` broken at spaces into lines of at most `width` display cells (a longer
// word stays whole), the first line prefixed by `first`, the rest by `rest`;
// every line ends with a newline. `text` is printed through printable
// (report/printable.hpp): a name in it cannot add a line; the prefixes are the
// printer's own.
std::string wrap_text(const std::string& text, std::size_t width, const std::string& first = "", const std::string& rest = "");

// One line of a command's text output: as long as it takes when Wide,
// wrapped at kFitColumns (as wrap_text) when Fit; ends with a newline.
std::string fit_line(const std::string& text, Width width, const std::string& first = "", const std::string& rest = "");

}  // namespace kvplan
