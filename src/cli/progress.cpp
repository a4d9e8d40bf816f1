#include "cli/progress.hpp"

#include <chrono>
#include <cstdlib>
#include <iostream>

#include <unistd.h>

#include <fmt/format.h>

namespace kvplan {

ProgressMode progress_mode(const std::ostream& err) {
    if (const char* v = std::getenv("KVPLAN_PROGRESS"); v && std::string(v) == "0") return ProgressMode::Off;
    return &err == &std::cerr && ::isatty(STDERR_FILENO) ? ProgressMode::InPlace : ProgressMode::Lines;
}

void ProgressText::update(std::size_t done, std::size_t total) {
    total_ = total;
    done_ = done;
}

std::string ProgressText::words(double elapsed_s) const {
    const std::size_t done = done_, total = total_;
    const std::string seconds = fmt::format("{:.0f} s", elapsed_s);
    if (total == 0) return fmt::format("kvplan: {}: searching, {}", what_, seconds);
    return fmt::format("kvplan: {}: searched {} of {} candidates, {}", what_, done, total, seconds);
}

std::string ProgressText::at(double elapsed_s) {
    if (mode_ == ProgressMode::Off || elapsed_s < kQuietS) return "";
    if (mode_ == ProgressMode::InPlace) {
        shown_ = true;
        // Back to the line's start, the words, then erase what a longer line left (ECMA-48 EL, "\x1b[K").
        return "\r" + words(elapsed_s) + "\x1b[K";
    }
    if (last_line_s_ && elapsed_s - *last_line_s_ < kLineS) return "";
    last_line_s_ = elapsed_s;
    shown_ = true;
    return words(elapsed_s) + "\n";
}

std::string ProgressText::finish() const {
    return mode_ == ProgressMode::InPlace && shown_ ? "\r\x1b[K" : "";
}

SearchProgress::SearchProgress(std::ostream& err, ProgressMode mode, std::string what) : err_(err), text_(mode, std::move(what)) {
    if (mode != ProgressMode::Off) thread_ = std::thread([this] { run(); });
}

SearchProgress::~SearchProgress() {
    if (!thread_.joinable()) return;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
    err_ << text_.finish() << std::flush;
}

void SearchProgress::run() {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_; })) {
        const std::string text = text_.at(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        if (!text.empty()) err_ << text << std::flush;
    }
}

}  // namespace kvplan
