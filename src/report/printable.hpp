// Text from users and files (a config's model_type, a device's or an
// engine's name, a folder's or a file's name), made safe for each output
// format at the one place it is rendered. Every printer words such a name
// through one of these, and the Table and the line helpers (fit_line,
// wrap_text) call them on every cell and line, so a printer cannot forget.
// The rule and its reasons: docs/errors.md, "Names in outputs".
#pragma once

#include <string>
#include <string_view>

namespace kvplan {

// Text (tables, notes, titles, errors): control characters (newline, carriage
// return, tab, escape and the rest of C0, and DEL) become visible escapes
// (\n, \r, \t, \x1b). A value with a newline then cannot split a line into
// two, start a line that a CI system reads as a command (GitHub's
// "::warning::"), or move a terminal's cursor and colours.
std::string printable(std::string_view text);

// A Markdown table cell: printable, and '|' as "\|", which GitHub-flavoured
// Markdown reads as a literal bar instead of a cell boundary (GFM spec,
// "Tables": "include a pipe in a cell's content by escaping it").
std::string markdown_cell(std::string_view text);

// A CSV cell (RFC 4180): printable (so a record is one line), then quoted
// when it holds a comma or a double quote, quotes doubled.
std::string csv_cell(std::string_view text);

// XML and HTML text or attribute value (SVG, the HTML report, JUnit): control
// characters as printable's escapes, since XML 1.0 forbids C0 other than tab,
// newline and carriage return even as character references (section 2.2); then
// & < > " as entities, ' as &#39; when `apostrophe`. `keep_newlines` keeps
// '\n' and '\t' raw, for text that is already printable line by line (the
// text output inside the HTML report's <pre>).
std::string markup_text(std::string_view text, bool apostrophe = false, bool keep_newlines = false);

// A word of a shell command that users paste (recommend's engine commands):
// as it is when it holds only safe characters, else single-quoted ('\'' for a
// quote); with a control character, bash's ANSI-C quoting ($'a\nb', \\ and
// \' escaped; bash manual, "ANSI-C Quoting"), so that the command pastes as
// the same path and prints no raw control character.
std::string shell_word(std::string_view word);

// A GitHub workflow command's message: '%', CR and LF as %25, %0D and %0A, as
// the runner decodes them (actions/toolkit, packages/core/src/command.ts,
// escapeData); other control characters as printable's escapes, since the
// runner prints them raw into the log.
std::string github_data(std::string_view text);
// A workflow command's property value: github_data, and ':' and ',' as %3A
// and %2C (command.ts, escapeProperty).
std::string github_property(std::string_view text);

}  // namespace kvplan
