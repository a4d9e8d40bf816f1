// Files embedded in the binary at build time: cmake/embed_dir.cmake writes
// every JSON file of a folder as an array of these, in name order, with its
// count (`<SYMBOL>[]` and `<SYMBOL>Count`).
#pragma once

#include <cstddef>
#include <string_view>

namespace kvplan::embedded {

struct NamedText {
    const char* name;
    const char* text;
};

// The text of the file called `name` among `count` files, or nullptr.
inline const char* find_text(const NamedText* files, std::size_t count, std::string_view name) {
    for (std::size_t i = 0; i < count; ++i)
        if (name == files[i].name) return files[i].text;
    return nullptr;
}

}  // namespace kvplan::embedded
