// How many terminal cells text takes: tables pad and wrap_text breaks by this,
// not by bytes, so that a cell holding "×", "µ" or "≤" (two or three bytes
// in UTF-8, one cell on screen) lines up with its column.
#pragma once

#include <cstddef>
#include <string_view>

namespace kvplan {

// Cells on a terminal: one per code point, two for the wide East Asian
// ranges (CJK, Hangul, full-width forms, most emoji), none for combining
// marks and zero-width characters. A byte that is not valid UTF-8 counts one
// cell, as terminals show a replacement character for it.
std::size_t display_width(std::string_view text);

// The display width of the widest line of `text` (lines end at '\n').
std::size_t widest_line(std::string_view text);

}  // namespace kvplan
