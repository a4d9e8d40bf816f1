#include "io/file_writer.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

#include "core/error.hpp"

namespace kvplan {

void check_writable(const std::string& path) {
    const std::filesystem::path target(path);
    const std::string folder = target.has_parent_path() ? target.parent_path().string() : std::string(".");
    if (::access(folder.c_str(), W_OK) != 0) usage_error("cannot write " + path + ": " + std::strerror(errno));
}

void write_file_atomically(const std::string& path, const std::string& text) {
    namespace fs = std::filesystem;
    const fs::path target(path);
    const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::string temp = (folder / (target.filename().string() + ".tmp.XXXXXX")).string();
    const int fd = ::mkstemp(temp.data());
    if (fd < 0) usage_error("cannot write " + path + ": " + std::strerror(errno));
    ::fchmod(fd, 0644);  // what a plain open() would give under the usual umask
    ::close(fd);
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        out << text;
        out.flush();
        if (!out) {
            std::remove(temp.c_str());
            usage_error("cannot write " + path + ": writing " + temp + " failed");
        }
    }
    std::error_code ec;
    fs::rename(temp, target, ec);
    if (ec) {
        std::remove(temp.c_str());
        usage_error("cannot write " + path + ": " + ec.message());
    }
}

}  // namespace kvplan
