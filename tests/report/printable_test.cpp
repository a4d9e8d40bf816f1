// The one set of escapes every output format goes through (report/printable.hpp),
// with a name holding every control character, '|', '<', '&' and a GitHub
// workflow command after a newline (issue 44, class 5).
#include "report/printable.hpp"

#include <cstdio>

#include <catch2/catch.hpp>

#include "report/svg_chart.hpp"
#include "report/table.hpp"
#include "xml_check.hpp"

using namespace kvplan;

namespace {

// Every C0 control character but NUL, then DEL, '|', '<', '&', and a line that
// GitHub's runner would read as a command if it began a line of the log.
std::string hostile() {
    std::string s = "gpu";
    for (int c = 0x01; c < 0x20; ++c) s += static_cast<char>(c);
    return s + "\x7f|<&>\"'\n::error::pwned";
}

// No byte below 0x20 but the newlines (and tabs) the format itself writes,
// and no DEL.
bool no_raw_control(const std::string& text, bool tabs_allowed = false) {
    for (char c : text) {
        const auto b = static_cast<unsigned char>(c);
        if ((b < 0x20 && c != '\n' && !(tabs_allowed && c == '\t')) || b == 0x7f) return false;
    }
    return true;
}

bool no_line_starts_with_colons(const std::string& text) {
    return text.rfind("::", 0) != 0 && text.find("\n::") == std::string::npos;
}

}  // namespace

TEST_CASE("printable: each control character as a visible escape, the rest unchanged") {
    // Hand-derived: \x01..\x08, then \t \n \x0b \x0c \r, then \x0e..\x1f, and DEL as \x7f.
    CHECK(printable("a\tb\nc\rd\x1b[31me\x07\x7f") == "a\\tb\\nc\\rd\\x1b[31me\\x07\\x7f");
    CHECK(printable("H100 80GB (\xC3\x97 2) |<&>") == "H100 80GB (\xC3\x97 2) |<&>");
    const std::string p = printable(hostile());
    CHECK(no_raw_control(p));
    CHECK(p.find('\n') == std::string::npos);
}

TEST_CASE("markdown_cell: '|' escaped, so a cell cannot add a column") {
    CHECK(markdown_cell("a|b") == "a\\|b");
    Table t({"name", "GiB"});
    t.add({hostile(), "80"});
    const std::string md = t.render_markdown();
    CHECK(no_raw_control(md));
    // Every line has the header's three unescaped bars.
    std::size_t start = 0;
    while (start < md.size()) {
        const std::size_t end = md.find('\n', start);
        const std::string line = md.substr(start, end - start);
        int bars = 0;
        for (std::size_t i = 0; i < line.size(); ++i) bars += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
        INFO(line);
        CHECK(bars == 3);
        start = end + 1;
    }
}

TEST_CASE("csv_cell: RFC 4180 quoting after the escapes, one record per line") {
    CHECK(csv_cell("plain") == "plain");
    CHECK(csv_cell("a,b") == "\"a,b\"");
    CHECK(csv_cell("say \"hi\"") == "\"say \"\"hi\"\"\"");
    CHECK(csv_cell("a\nb") == "a\\nb");
    Table t({"name", "GiB"});
    t.add({hostile(), "80"});
    const std::string csv = t.render_csv();
    CHECK(no_raw_control(csv));
    CHECK(csv == "name,GiB\n" + csv_cell(hostile()) + ",80\n");
}

TEST_CASE("the text table and the line helpers escape every cell and line") {
    Table t({"name", "GiB"});
    t.add({hostile(), "80"});
    t.add_heading(hostile());
    const std::string text = t.render_text() + fit_line("note: " + hostile(), Width::Fit, "", "  ") + fit_line(hostile(), Width::Wide) +
                             wrap_text(hostile(), 40, "  - ", "    ");
    CHECK(no_raw_control(text));
    CHECK(no_line_starts_with_colons(text));
}

TEST_CASE("markup_text: XML 1.0 text with no forbidden character") {
    CHECK(markup_text("a<b & \"c\" 'd'") == "a&lt;b &amp; &quot;c&quot; 'd'");
    CHECK(markup_text("'", true) == "&#39;");
    CHECK(markup_text("a\nb\x1b", false, true) == "a\nb\\x1b");
    const std::string svg =
        "<svg xmlns=\"http://www.w3.org/2000/svg\"><text title=\"" + escape_markup(hostile()) + "\">" + escape_markup(hostile()) + "</text></svg>";
    CHECK(test::xml_problem(svg).empty());
    CHECK(no_raw_control(svg));
}

TEST_CASE("github_data: %, CR and LF as the runner decodes them, other controls escaped") {
    // actions/toolkit command.ts: escapeData replaces % CR LF; escapeProperty also : and ,.
    CHECK(github_data("50% a\r\nb") == "50%25 a%0D%0Ab");
    CHECK(github_property("a:b,c") == "a%3Ab%2Cc");
    CHECK(github_data("\x1b[31m\x07") == "\\x1b[31m\\x07");
    const std::string line = "::error title=" + github_property(hostile()) + "::" + github_data(hostile()) + "\n";
    CHECK(no_raw_control(line));
    CHECK(line.find('\n') == line.size() - 1);
}

TEST_CASE("shell_word: a pasted command names the same path and holds no raw control character") {
    CHECK(shell_word("/models/llama-3.1-8b") == "/models/llama-3.1-8b");
    CHECK(shell_word("my model") == "'my model'");
    CHECK(shell_word("it's") == "'it'\\''s'");
    // bash's ANSI-C quoting: \n, \x1b, and \' and \\ escaped.
    CHECK(shell_word("a\nb\x1b'c\\") == "$'a\\nb\\x1b\\'c\\\\'");
    const std::string word = shell_word(hostile());
    CHECK(no_raw_control(word));
    // bash reads it back as the same bytes (popen's /bin/sh may not know $'...').
    const std::string command = "bash -c " + shell_word("printf %s " + word);
    if (FILE* pipe = ::popen(command.c_str(), "r")) {
        std::string back;
        char buf[256];
        for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) back.append(buf, n);
        const int status = ::pclose(pipe);
        INFO(command);
        if (status == 0) CHECK(back == hostile());
    }
}
