// The one error type kvplan throws. The CLI catches it once and maps `kind`
// to an exit code (see docs/errors.md): usage mistakes exit 2, bad data 65.
#pragma once

#include <stdexcept>
#include <string>

namespace kvplan {

enum class ErrorKind {
    Usage,        // a flag or argument is wrong: exit 2
    Data,         // a file's content is malformed, inconsistent or unsupported: exit 65 (EX_DATAERR)
    Unavailable,  // a device or a build feature the command needs is not here: exit 69 (EX_UNAVAILABLE)
};

class Error : public std::runtime_error {
public:
    Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
    ErrorKind kind() const { return kind_; }

private:
    ErrorKind kind_;
};

// Shorthands that read well at the throw site.
[[noreturn]] inline void usage_error(const std::string& message) {
    throw Error(ErrorKind::Usage, message);
}
[[noreturn]] inline void data_error(const std::string& message) {
    throw Error(ErrorKind::Data, message);
}
[[noreturn]] inline void unavailable_error(const std::string& message) {
    throw Error(ErrorKind::Unavailable, message);
}

// A 64-bit overflow in checked arithmetic (checked.hpp). A usage error by
// default: the absurd number usually came from a flag.
class OverflowError : public Error {
public:
    explicit OverflowError(const std::string& message) : Error(ErrorKind::Usage, message) {}
};

// Runs `body`; an overflow it throws is rethrown as a data error prefixed
// with `prefix` (e.g. the config's name), for steps whose inputs come from a
// file, so that the message names the file and the exit code is 65.
template <typename F>
auto overflow_blames(const std::string& prefix, F&& body) -> decltype(body()) {
    try {
        return body();
    } catch (const OverflowError& e) {
        throw Error(ErrorKind::Data, prefix + ": " + e.what());
    }
}

}  // namespace kvplan
