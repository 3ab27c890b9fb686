#pragma once
// Writes tape records on a thread of its own, so training waits on the disk only when more
// than `capacity` records are pending.

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "zkdv/tape/tape_writer.h"

namespace zkdv {

class BackgroundWriter {
public:
    using Job = std::function<void(TapeWriter&)>;

    BackgroundWriter(TapeWriter& writer, std::size_t capacity);
    ~BackgroundWriter();

    // Queues a job; blocks while `capacity` jobs are pending. Rethrows a failed write.
    void submit(Job job);
    // Waits until every job has run; rethrows the first failed write.
    void drain();
    std::size_t pendingHighWater() const;

private:
    void run();
    void rethrowFailure();

    TapeWriter& writer_;
    std::size_t capacity_;
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<Job> jobs_;
    bool running_ = false;  // a job is being written
    bool stopping_ = false;
    std::exception_ptr failure_;
    std::size_t highWater_ = 0;
    std::thread thread_;
};

}  // namespace zkdv
