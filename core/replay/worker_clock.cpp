#include "worker_clock.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

namespace zkdv::worker {

namespace {

// The state letter of /proc/PID/stat ('R', 'S', 'D', 'T', 't', …), 0 when unreadable. The
// command name may hold spaces and parentheses: the state follows the last ')'.
char processState(pid_t pid)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::size_t close = text.rfind(')');
    return close != std::string::npos && close + 2 < text.size() ? text[close + 2] : 0;
}

// Seconds the worker's main thread waited on a run queue (the second field of
// /proc/PID/schedstat), 0 when the kernel does not say.
double runQueueSeconds(pid_t pid)
{
    std::FILE* file = std::fopen(("/proc/" + std::to_string(pid) + "/schedstat").c_str(), "r");
    if (!file)
        return 0;
    unsigned long long running = 0, waiting = 0;
    const int read = std::fscanf(file, "%llu %llu", &running, &waiting);
    std::fclose(file);
    return read == 2 ? static_cast<double>(waiting) * 1e-9 : 0;
}

double seconds(WorkerClock::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

WorkerClock::WorkerClock(pid_t pid) : pid_(pid) { restart(); }

void WorkerClock::restart()
{
    start_ = lastSample_ = Clock::now();
    stopped_ = 0;
    runDelayAtStart_ = pid_ > 0 ? runQueueSeconds(pid_) : 0;
}

void WorkerClock::sample()
{
    const Clock::time_point now = Clock::now();
    if (pid_ > 0) {
        const char state = processState(pid_);
        if (state == 'T' || state == 't')
            stopped_ += seconds(now - lastSample_);
    }
    lastSample_ = now;
}

double WorkerClock::unchargedSeconds() const
{
    const double queued = pid_ > 0 ? std::max(0.0, runQueueSeconds(pid_) - runDelayAtStart_) : 0;
    return std::min(seconds(Clock::now() - start_), stopped_ + queued);
}

double WorkerClock::chargedSeconds() const { return std::max(0.0, seconds(Clock::now() - start_) - unchargedSeconds()); }

}  // namespace zkdv::worker
