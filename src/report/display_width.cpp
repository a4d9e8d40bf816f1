#include "report/display_width.hpp"

#include <algorithm>
#include <cstdint>

namespace kvplan {

namespace {

struct Range {
    char32_t first, last;
};

// Combining marks and zero-width characters: drawn over the cell before them.
constexpr Range kZeroWidth[] = {
    {0x0300, 0x036F}, {0x200B, 0x200F}, {0x2060, 0x2064}, {0xFE00, 0xFE0F}, {0xFEFF, 0xFEFF},
};

// East Asian Wide and Fullwidth (Unicode UAX #11), the common blocks.
constexpr Range kWide[] = {
    {0x1100, 0x115F}, {0x2E80, 0x303E},   {0x3041, 0x33FF},   {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},
    {0xA000, 0xA4CF}, {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFE30, 0xFE4F},   {0xFF00, 0xFF60},
    {0xFFE0, 0xFFE6}, {0x1F300, 0x1F64F}, {0x1F680, 0x1F6FF}, {0x1F900, 0x1F9FF}, {0x20000, 0x3FFFD},
};

template <std::size_t N>
bool in(const Range (&ranges)[N], char32_t c) {
    return std::any_of(std::begin(ranges), std::end(ranges), [c](const Range& r) { return c >= r.first && c <= r.last; });
}

std::size_t cells(char32_t c) {
    if (in(kZeroWidth, c)) return 0;
    return in(kWide, c) ? 2 : 1;
}

// The length of the UTF-8 sequence that `lead` starts, or 0 if it starts none.
std::size_t sequence_length(unsigned char lead) {
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    if (lead >= 0xE0 && lead <= 0xEF) return 3;
    if (lead >= 0xF0 && lead <= 0xF4) return 4;
    return 0;
}

}  // namespace

std::size_t display_width(std::string_view text) {
    std::size_t width = 0;
    for (std::size_t i = 0; i < text.size();) {
        const auto lead = static_cast<unsigned char>(text[i]);
        const std::size_t n = sequence_length(lead);
        bool valid = n > 0 && i + n <= text.size();
        char32_t c = n == 1 ? lead : lead & (0x7F >> n);
        for (std::size_t k = 1; valid && k < n; ++k) {
            const auto b = static_cast<unsigned char>(text[i + k]);
            valid = (b & 0xC0) == 0x80;
            c = (c << 6) | (b & 0x3F);
        }
        if (!valid) {
            ++width;  // one stray byte, one replacement cell
            ++i;
            continue;
        }
        width += cells(c);
        i += n;
    }
    return width;
}

std::size_t widest_line(std::string_view text) {
    std::size_t widest = 0;
    while (!text.empty()) {
        const std::size_t end = std::min(text.find('\n'), text.size());
        widest = std::max(widest, display_width(text.substr(0, end)));
        text.remove_prefix(std::min(end + 1, text.size()));
    }
    return widest;
}

}  // namespace kvplan
