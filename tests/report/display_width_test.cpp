#include "report/display_width.hpp"

#include <catch2/catch.hpp>

using namespace kvplan;

TEST_CASE("display width counts terminal cells, not bytes") {
    CHECK(display_width("") == 0);
    CHECK(display_width("tok/s") == 5);
    // Two-byte and three-byte code points take one cell each.
    CHECK(display_width("8 \xC3\x97 H100") == 8);     // "8 × H100", × is U+00D7
    CHECK(display_width("12 \xC2\xB5s") == 5);        // "12 µs", µ is U+00B5
    CHECK(display_width("\xE2\x89\xA4 0.5 s") == 7);  // "≤ 0.5 s", ≤ is U+2264
    // Wide East Asian characters take two cells, a combining accent none.
    CHECK(display_width("\xE6\xA8\xA1\xE5\x9E\x8B") == 4);  // "模型"
    CHECK(display_width("e\xCC\x81") == 1);                 // e + U+0301
    CHECK(display_width("\xF0\x9F\x9A\x80") == 2);          // U+1F680, a rocket
    // A byte that is not UTF-8 shows as one replacement cell.
    CHECK(display_width("a\xFF"
                        "b") == 3);
    CHECK(display_width("\xE2\x89") == 2);  // a truncated sequence: two stray bytes
}

TEST_CASE("the widest line of a text is measured in display cells") {
    CHECK(widest_line("") == 0);
    CHECK(widest_line("ab\nabcd\n") == 4);
    CHECK(widest_line("\xC3\x97\xC3\x97\xC3\x97\nab") == 3);
    CHECK(widest_line("no newline at the end") == 21);
}
