#pragma once
// The time a replay worker's program is charged for (docs/replay.md, "Whose failure"): wall
// time less the time the worker was stopped (SIGSTOP, a debugger, a paused job) or waiting
// for a CPU on a loaded machine. A stall of the auditor's own machine is never the program's
// cost, so it can never make an honest tape's transaction `program-time`; a program that
// computes, loops or blocks on its own is charged every second of it.

#include <chrono>

#include <sys/types.h>

namespace zkdv::worker {

class WorkerClock {
public:
    using Clock = std::chrono::steady_clock;

    WorkerClock() = default;
    // Charges `pid` from now on.
    explicit WorkerClock(pid_t pid);
    // A new phase (the next transaction): charged from now.
    void restart();
    // Looks at the worker: time since the last sample while it was stopped is not charged.
    // Call it at least every 100 ms; a stop shorter than that may go unseen (and is charged).
    void sample();
    // Wall seconds since restart(), less the stopped and run-queue seconds since then.
    double chargedSeconds() const;
    // The part of the wall time since restart() not charged.
    double unchargedSeconds() const;

private:
    pid_t pid_ = -1;
    Clock::time_point start_{}, lastSample_{};
    double stopped_ = 0;            // seconds seen stopped since start_
    double runDelayAtStart_ = 0;    // the worker's run-queue wait, as the kernel counts it, at start_
};

}  // namespace zkdv::worker
