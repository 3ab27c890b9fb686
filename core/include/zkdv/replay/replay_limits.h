#pragma once
// How much time and memory a replay worker gets before the replay gives up on it
// (docs/replay.md, "Containment" and "Time budget"): set by the auditor and measured by the
// replay itself, never taken from what the tape claims.

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace zkdv {

struct ReplayLimits {
    // A transaction may take `timeFactor` times the median time this run's replayed
    // transactions took (as the replay measured them), at least `transactionFloorSeconds`,
    // plus the time to read the snapshots it loads or compares at `kSnapshotBytesPerSecond`.
    // Until the run has measured a transaction, one gets `firstTransactionSeconds`.
    double timeFactor = 20.0;
    double transactionFloorSeconds = 5.0;
    double firstTransactionSeconds = 600.0;
    // A worker's start: libtorch, then loading the program on the device.
    double startSeconds = 60.0;
    // RLIMIT_DATA of CPU workers; 0: derived from the tape (defaultMemoryLimit). CUDA workers
    // get none (CUDA maps far more than it uses).
    std::uint64_t memoryLimitBytes = 0;

    static constexpr double kSnapshotBytesPerSecond = 50e6;
    static constexpr std::uint64_t kMemoryFloorBytes = std::uint64_t(1) << 30;
    static constexpr std::uint64_t kMemoryMultiple = 16;
    static constexpr std::uint64_t kMemoryPerThreadBytes = std::uint64_t(16) << 20;  // a thread's stack counts as data

    // The time to read `snapshotBytes` of snapshots, which the budget allows besides.
    static double snapshotSeconds(std::uint64_t snapshotBytes) { return static_cast<double>(snapshotBytes) / kSnapshotBytesPerSecond; }
    // kMemoryFloorBytes + kMemoryPerThreadBytes x intra-op threads + kMemoryMultiple x
    // (program + largest snapshot + largest transaction).
    static std::uint64_t defaultMemoryLimit(std::uint64_t programBytes, std::uint64_t largestSnapshotBytes,
                                            std::uint64_t largestTransactionBytes, int intraOpThreads);
};

// The time budget of a run's next transaction, from the times its transactions took so far.
// A median: the few transactions a dishonest program makes slow cannot raise it, and making
// every transaction slow costs the trainer's program the same time on each, so the budget
// follows work the replay actually saw done.
class TransactionBudget {
public:
    explicit TransactionBudget(const ReplayLimits& limits) : limits_(limits) {}

    // A transaction of the run took `seconds`, as the replay measured it.
    void measured(double seconds);
    std::uint64_t measuredCount() const { return low_.size() + high_.size(); }
    // The median of the measured times; 0 before the first.
    double medianSeconds() const;
    // The next transaction's budget, reading `snapshotBytes` of snapshots besides.
    double seconds(std::uint64_t snapshotBytes) const;

private:
    ReplayLimits limits_;
    std::priority_queue<double> low_;                                         // the lower half, largest on top
    std::priority_queue<double, std::vector<double>, std::greater<double>> high_;  // the upper half, smallest on top
};

}  // namespace zkdv
