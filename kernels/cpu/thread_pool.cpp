#include "thread_pool.hpp"

namespace kvplan::kernels {

ThreadPool::ThreadPool(unsigned threads) {
    if (threads == 0) threads = 1;
    for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
}

void ThreadPool::drain() {
    for (std::size_t i = next_.fetch_add(1); i < tasks_; i = next_.fetch_add(1)) (*job_)(i);
}

// Every worker takes part in every generation exactly once, and run() waits
// for all of them, so no worker can carry an old job into the next run.
void ThreadPool::work() {
    std::size_t seen = 0;
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
        }
        drain();
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (--pending_ == 0) done_.notify_all();
        }
    }
}

void ThreadPool::run(std::size_t n, const std::function<void(std::size_t)>& fn) {
    if (n == 0) return;
    if (workers_.empty() || n == 1) {
        for (std::size_t i = 0; i < n; ++i) fn(i);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        job_ = &fn;
        tasks_ = n;
        next_.store(0);
        pending_ = workers_.size();
        ++generation_;
    }
    wake_.notify_all();
    drain();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
}

}  // namespace kvplan::kernels
