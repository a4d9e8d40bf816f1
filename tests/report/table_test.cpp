#include "report/table.hpp"

#include <catch2/catch.hpp>

#include "report/display_width.hpp"

using namespace kvplan;

TEST_CASE("a text table aligns cells that hold multi-byte characters") {
    Table t({"layout", "GPUs"});
    t.add({"2 \xC3\x97 4", "8"});
    t.add({"TP 8", "8"});
    const std::string text = t.render_text();
    // Every row is as wide as the header: the × row is not padded short.
    std::size_t start = 0;
    std::size_t widths[4] = {};
    for (std::size_t i = 0; i < 4; ++i) {
        const std::size_t end = text.find('\n', start);
        widths[i] = display_width(std::string_view(text).substr(start, end - start));
        start = end + 1;
    }
    CHECK(widths[2] == widths[0]);
    CHECK(widths[3] == widths[0]);
}

TEST_CASE("wrap_text breaks by display cells") {
    // Ten "×" are 20 bytes but 10 cells: they fit a 10-cell line.
    std::string ten;
    for (int i = 0; i < 10; ++i) ten += "\xC3\x97";
    CHECK(wrap_text(ten + " x", 12) == ten + " x\n");
    CHECK(wrap_text(ten + " xy", 12) == ten + "\nxy\n");
}

TEST_CASE("a header with a newline stacks in the text table and joins in Markdown and CSV") {
    Table t({"context", "KV/request\n(GiB)"}, 0);
    t.add({"4,096", "0.50"});
    CHECK(t.render_text() ==
          "           KV/request\n"
          "  context       (GiB)\n"
          "  --------------------\n"
          "    4,096        0.50\n");
    CHECK(t.render_markdown().rfind("| context | KV/request (GiB) |\n", 0) == 0);
    CHECK(t.render_csv() == "context,KV/request (GiB)\n\"4,096\",0.50\n");
}

TEST_CASE("the wide text table prints stacked headers on one line, a break after a slash joined without a space") {
    Table t({"context", "reserved/\nrequest"}, 0);
    t.add({"4,096", "500.00 MiB"});
    CHECK(t.render_text(Width::Wide) ==
          "  context  reserved/request\n"
          "  --------------------------\n"
          "    4,096        500.00 MiB\n");
    CHECK(t.render_markdown().rfind("| context | reserved/request |\n", 0) == 0);
}
