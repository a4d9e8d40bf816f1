// Writing output files so that nothing is half-written: the text goes to a
// temporary file in the same folder, which is then renamed over the target.
#pragma once

#include <string>

namespace kvplan {

// Throws Error(Usage) naming `path` when the folder is not writable; the old
// file, if any, is left as it was.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace kvplan
