// A fixed pool of worker threads for the CPU kernels: run(n, fn) calls
// fn(i) for i in [0, n) across the workers and the caller, and returns when
// all are done. Persistent threads, so a decode step's dozens of parallel
// loops do not each pay for thread creation.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kvplan::kernels {

class ThreadPool {
public:
    explicit ThreadPool(unsigned threads = std::thread::hardware_concurrency());
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }

    // Calls fn(i) for every i in [0, n); tasks are handed out one index at a time.
    void run(std::size_t n, const std::function<void(std::size_t)>& fn);

private:
    void work();
    void drain();

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    const std::function<void(std::size_t)>* job_ = nullptr;
    std::size_t tasks_ = 0;
    std::atomic<std::size_t> next_{0};
    std::size_t pending_ = 0;  // workers that have not finished the current generation
    std::size_t generation_ = 0;
    bool stop_ = false;
};

}  // namespace kvplan::kernels
