// What a command prints and the exit code it ends with, for commands whose
// success is not simply 0: check's regressions and recommend's "nothing meets
// the targets" exit 1 (docs/errors.md).
#pragma once

#include <string>

namespace kvplan {

struct CommandOutput {
    std::string text;
    int exit_code = 0;
};

}  // namespace kvplan
