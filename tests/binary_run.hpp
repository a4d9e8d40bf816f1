// Running the real kvplan binary from a test: a scratch directory for
// inputs and captures, and one Run per command with its exit code, signal,
// stdout and stderr. Shared by the end-to-end tests (bad input, check).
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/wait.h>

namespace kvplan::test {

namespace fs = std::filesystem;

// A private temporary directory (mkdtemp), removed with everything in it.
class ScratchDir {
public:
    ScratchDir() {
        std::string templ = (fs::temp_directory_path() / "kvplan_test_XXXXXX").string();
        if (!::mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed for " + templ);
        path_ = templ;
    }
    ~ScratchDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;

    const fs::path& path() const { return path_; }

    // Writes `text` to `name` inside the directory and returns its full path.
    fs::path write(const std::string& name, const std::string& text) const {
        fs::path file = path_ / name;
        fs::create_directories(file.parent_path());
        std::ofstream out(file, std::ios::binary);
        out << text;
        if (!out) throw std::runtime_error("cannot write " + file.string());
        return file;
    }

private:
    fs::path path_;
};

// One directory for the whole test run: stdout/stderr captures and generated inputs.
inline ScratchDir& scratch() {
    static ScratchDir dir;
    return dir;
}

inline std::string shell_quote(const std::string& arg) {
    std::string out = "'";
    for (char c : arg) {
        if (c == '\'') out += "'\\''";
        else out += c;
    }
    return out + "'";
}

inline std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The outcome of one run of the kvplan binary.
struct Run {
    std::string command;  // as typed in a shell, for failure messages
    int exit_code = -1;   // WEXITSTATUS, or -1 when killed by a signal
    int signal = 0;       // the signal that killed it (a crash), else 0
    std::string out;
    std::string err;
    double seconds = 0;

    // With `address_space_kib` above 0 the binary runs under `ulimit -v` of
    // that many KiB (its allocations fail beyond it, as on a small machine).
    static Run kvplan(const std::vector<std::string>& args, long address_space_kib = 0) {
        Run r;
        r.command =
            (address_space_kib > 0 ? "ulimit -v " + std::to_string(address_space_kib) + " && exec " : std::string()) + shell_quote(KVPLAN_BINARY);
        for (const auto& a : args) r.command += " " + shell_quote(a);
        const fs::path out_file = scratch().path() / "stdout.txt";
        const fs::path err_file = scratch().path() / "stderr.txt";
        const std::string line = r.command + " </dev/null >" + shell_quote(out_file.string()) + " 2>" + shell_quote(err_file.string());
        // No progress lines on stderr (cli/progress.hpp): a slow run under load would add them to what the tests compare.
        ::setenv("KVPLAN_PROGRESS", "0", 1);
        const auto start = std::chrono::steady_clock::now();
        const int status = std::system(line.c_str());
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (status != -1 && WIFEXITED(status)) {
            r.exit_code = WEXITSTATUS(status);
            // The shell reports a child killed by signal N as exit 128 + N.
            if (r.exit_code > 128 && r.exit_code < 128 + 65) r.signal = r.exit_code - 128;
        } else if (status != -1 && WIFSIGNALED(status)) {
            r.signal = WTERMSIG(status);
        }
        r.out = read_file(out_file);
        r.err = read_file(err_file);
        return r;
    }
};

}  // namespace kvplan::test
