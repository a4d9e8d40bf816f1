// Progress of a long search on stderr (`recommend`): nothing for the first
// second, then how far it got, rewritten in place on a terminal and as a
// plain line every few seconds anywhere else (a CI log, a file), as cargo
// and pip show theirs. stdout never holds it, so --json and --format output
// stay what they were. KVPLAN_PROGRESS=0 turns it off (the doc test and the
// tests' runs of the binary set it: their stderr is compared).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <thread>

namespace kvplan {

enum class ProgressMode { Off, Lines, InPlace };

// Off when KVPLAN_PROGRESS is 0; InPlace when `err` is the process's stderr
// and that is a terminal; Lines otherwise.
ProgressMode progress_mode(const std::ostream& err);

// What the ticker prints, without a clock or a thread (the tests drive it).
class ProgressText {
public:
    ProgressText(ProgressMode mode, std::string what) : mode_(mode), what_(std::move(what)) {}
    // Candidates searched so far, of `total` (0: not known yet).
    void update(std::size_t done, std::size_t total);
    // The text to write at `elapsed_s` seconds since the start; "" when
    // nothing is due (the first second, or between two plain lines).
    std::string at(double elapsed_s);
    // The text to write at the end: on a terminal the line cleared, else "".
    std::string finish() const;

    static constexpr double kQuietS = 1.0;  // shorter searches print nothing
    static constexpr double kLineS = 5.0;   // plain lines: one every this many seconds

private:
    std::string words(double elapsed_s) const;
    ProgressMode mode_;
    std::string what_;
    std::atomic<std::size_t> done_{0}, total_{0};
    std::optional<double> last_line_s_;  // when the last plain line was written
    bool shown_ = false;
};

// A ProgressText ticked every 100 ms on its own thread while the search runs;
// stops and finishes the line when it goes out of scope.
class SearchProgress {
public:
    SearchProgress(std::ostream& err, ProgressMode mode, std::string what);
    ~SearchProgress();
    SearchProgress(const SearchProgress&) = delete;
    SearchProgress& operator=(const SearchProgress&) = delete;
    void update(std::size_t done, std::size_t total) { text_.update(done, total); }

private:
    void run();
    std::ostream& err_;
    ProgressText text_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace kvplan
