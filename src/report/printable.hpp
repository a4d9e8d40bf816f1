// Text from users and files, made safe to print: control characters
// (newline, carriage return, tab, escape and the rest of C0, and DEL) become
// visible escapes (\n, \r, \t, \x1b). A value with a newline then cannot split
// an error into two lines, start a line that a CI system reads as a command
// (GitHub's "::warning::"), or move a terminal's cursor and colours.
#pragma once

#include <string>
#include <string_view>

namespace kvplan {

std::string printable(std::string_view text);

}  // namespace kvplan
