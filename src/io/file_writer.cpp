#include "io/file_writer.hpp"

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <optional>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <sys/stat.h>

#include "core/error.hpp"

namespace kvplan {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void cannot_write(const std::string& path, const std::string& why) {
    usage_error("cannot write " + path + ": " + why);
}

// Where the text really goes, and the mode it must keep.
struct Target {
    fs::path file;               // the symlink's final target, or the path itself
    std::optional<mode_t> mode;  // the existing file's permission bits; nullopt: a new file
};

// Follows symlinks (a baseline kept in a dotfiles repo is often one) so that
// the link stays a link and its target is what changes, and refuses what a
// rename would silently break: a folder, a FIFO or a device node, a file
// whose mode says read-only, a folder we cannot write.
Target resolve_target(const std::string& path) {
    Target t{fs::path(path), std::nullopt};
    for (int hops = 0;; ++hops) {
        struct stat link {};
        if (::lstat(t.file.c_str(), &link) != 0 || !S_ISLNK(link.st_mode)) break;
        if (hops == 40) cannot_write(path, "too many levels of symbolic links");
        std::error_code ec;
        const fs::path next = fs::read_symlink(t.file, ec);
        if (ec) cannot_write(path, ec.message());
        t.file = next.is_absolute() ? next : t.file.parent_path() / next;
    }
    struct stat st {};
    if (::stat(t.file.c_str(), &st) == 0) {
        if (!S_ISREG(st.st_mode))
            cannot_write(path, std::string(S_ISDIR(st.st_mode) ? "it is a folder" : "it is not a regular file (a FIFO, socket or device)") +
                                   "; kvplan writes only regular files");
        if ((st.st_mode & 0222) == 0) cannot_write(path, "the file is read-only (no write permission in its mode); make it writable first");
        t.mode = st.st_mode & 07777;
    } else if (errno != ENOENT) {
        cannot_write(path, std::strerror(errno));
    }
    const fs::path folder = t.file.has_parent_path() ? t.file.parent_path() : fs::path(".");
    if (::access(folder.c_str(), W_OK) != 0) cannot_write(path, std::strerror(errno));
    return t;
}

// The mode a plain open(O_CREAT, 0666) would give under the current umask.
mode_t new_file_mode() {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return 0666 & ~mask;
}

// The temporary file of the write in progress, removed if the process is
// interrupted (SIGINT, SIGTERM, SIGHUP) before the rename. A SIGKILL cannot
// be caught: it may leave the temporary behind, never a half-written target.
char g_temp_path[4096];

extern "C" void remove_temp_and_reraise(int sig) {
    if (g_temp_path[0] != '\0') ::unlink(g_temp_path);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

class TempFile {
public:
    explicit TempFile(const fs::path& target)
        : path_((target.parent_path().empty() ? fs::path(".") : target.parent_path()) / ("." + target.filename().string() + ".tmp.XXXXXX")) {
        // The signals wait (blocked) from before the file exists until its
        // handler knows its name: one arriving in between would otherwise
        // end the process with the temporary left behind. A signal that came
        // meanwhile is delivered at the unblock, to the handler.
        sigset_t block, old;
        sigemptyset(&block);
        for (int sig : kSignals) sigaddset(&block, sig);
        ::pthread_sigmask(SIG_BLOCK, &block, &old);
        std::string name = path_.string();
        fd_ = ::mkstemp(name.data());
        if (fd_ >= 0) {
            path_ = name;
            created_ = true;
            if (name.size() < sizeof g_temp_path) {
                std::memcpy(g_temp_path, name.c_str(), name.size() + 1);
                for (std::size_t i = 0; i < kSignals.size(); ++i) previous_[i] = std::signal(kSignals[i], remove_temp_and_reraise);
                handlers_ = true;
            }
        }
        const int saved = errno;  // mkstemp's, for the caller's message
        ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
        errno = saved;
    }
    ~TempFile() {
        if (fd_ >= 0) ::close(fd_);
        if (created_ && !renamed_) ::unlink(path_.c_str());
        g_temp_path[0] = '\0';
        if (handlers_)
            for (std::size_t i = 0; i < kSignals.size(); ++i) std::signal(kSignals[i], previous_[i]);
    }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;

    bool opened() const { return fd_ >= 0; }
    int fd() const { return fd_; }
    const fs::path& path() const { return path_; }
    // Closes the file; the caller renames it next.
    bool close() {
        const int fd = fd_;
        fd_ = -1;
        return ::close(fd) == 0;
    }
    void mark_renamed() { renamed_ = true; }

private:
    static constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};
    fs::path path_;
    int fd_ = -1;
    bool created_ = false, renamed_ = false, handlers_ = false;
    std::array<void (*)(int), 3> previous_{};
};

bool write_all(int fd, const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

// After the rename, the folder's entry must reach the disk too.
void sync_folder(const fs::path& file) {
    const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
    const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return;
    ::fsync(fd);
    ::close(fd);
}

}  // namespace

void check_writable(const std::string& path) {
    resolve_target(path);
}

void write_file_atomically(const std::string& path, const std::string& text) {
    const Target target = resolve_target(path);
    TempFile temp(target.file);
    if (!temp.opened()) cannot_write(path, std::strerror(errno));
    if (::fchmod(temp.fd(), target.mode.value_or(new_file_mode())) != 0) cannot_write(path, std::strerror(errno));
    if (!write_all(temp.fd(), text) || ::fsync(temp.fd()) != 0)
        cannot_write(path, "writing " + temp.path().string() + " failed: " + std::strerror(errno));
    if (!temp.close()) cannot_write(path, "writing " + temp.path().string() + " failed: " + std::strerror(errno));
    std::error_code ec;
    fs::rename(temp.path(), target.file, ec);
    if (ec) cannot_write(path, ec.message());
    temp.mark_renamed();
    sync_folder(target.file);
}

}  // namespace kvplan
