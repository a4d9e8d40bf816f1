// Writing output files so that nothing is half-written: the text goes to a
// temporary file in the same folder, which is then renamed over the target.
#pragma once

#include <string>

namespace kvplan {

// Throws Error(Usage) naming `path` when the folder is not writable; the old
// file, if any, is left as it was.
void write_file_atomically(const std::string& path, const std::string& text);

// Throws the same error write_file_atomically would when `path`'s folder is
// missing or not writable: for commands that run a long time before writing.
void check_writable(const std::string& path);

}  // namespace kvplan
