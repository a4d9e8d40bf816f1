// How a command's text output is laid out, a choice a result carries to its
// printer (src/report/table.hpp): Fit drops, stacks and wraps to 100
// columns; Wide prints the full tables. Markdown, CSV and JSON are never
// narrowed: scripts read their columns.
#pragma once

namespace kvplan {

enum class Width { Fit, Wide };

}  // namespace kvplan
