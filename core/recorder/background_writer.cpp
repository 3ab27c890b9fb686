#include "background_writer.h"

namespace zkdv {

BackgroundWriter::BackgroundWriter(TapeWriter& writer, std::size_t capacity)
    : writer_(writer), capacity_(capacity ? capacity : 1), thread_([this] { run(); })
{
}

BackgroundWriter::~BackgroundWriter()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
}

void BackgroundWriter::submit(Job job)
{
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return failure_ || jobs_.size() + (running_ ? 1 : 0) < capacity_; });
    rethrowFailure();
    jobs_.push_back(std::move(job));
    highWater_ = std::max(highWater_, jobs_.size() + (running_ ? 1 : 0));
    changed_.notify_all();
}

void BackgroundWriter::drain()
{
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return failure_ || (jobs_.empty() && !running_); });
    rethrowFailure();
}

std::size_t BackgroundWriter::pendingHighWater() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return highWater_;
}

void BackgroundWriter::rethrowFailure()
{
    if (failure_)
        std::rethrow_exception(failure_);
}

void BackgroundWriter::run()
{
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        changed_.wait(lock, [&] { return stopping_ || (!jobs_.empty() && !failure_); });
        if (jobs_.empty() || failure_) {
            if (stopping_)
                return;
            continue;
        }
        Job job = std::move(jobs_.front());
        jobs_.pop_front();
        running_ = true;
        lock.unlock();
        std::exception_ptr failure;
        try {
            job(writer_);
            // Whenever the queue runs dry the records go to the OS, so a killed process loses
            // at most the records still queued, never a writer's buffer of whole records.
            bool idle;
            {
                std::lock_guard<std::mutex> relock(mutex_);
                idle = jobs_.empty();
            }
            if (idle)
                writer_.flush();
        } catch (...) {
            failure = std::current_exception();
        }
        lock.lock();
        running_ = false;
        if (failure) {
            // After a failed write the tape ends at its last whole record; later records are dropped.
            failure_ = failure;
            jobs_.clear();
        }
        changed_.notify_all();
    }
}

}  // namespace zkdv
