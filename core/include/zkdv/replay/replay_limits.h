#pragma once
// How much time and memory a replay worker gets before the replay gives up on it
// (docs/replay.md, "Containment"): derived from what the tape says, overridable.

#include <cstdint>

namespace zkdv {

struct ReplayLimits {
    // A transaction may take `timeFactor` times the wall time the tape recorded for it, plus
    // `transactionFloorSeconds`, plus the time to read the snapshots it loads or compares at
    // `kSnapshotBytesPerSecond`. Recorded times above `maxRecordedSeconds` count as that.
    double timeFactor = 20.0;
    double transactionFloorSeconds = 5.0;
    double maxRecordedSeconds = 3600.0;
    // A worker's start: libtorch, then loading the program on the device.
    double startSeconds = 60.0;
    // RLIMIT_DATA of CPU workers; 0: derived from the tape (defaultMemoryLimit). CUDA workers
    // get none (CUDA maps far more than it uses).
    std::uint64_t memoryLimitBytes = 0;

    static constexpr double kSnapshotBytesPerSecond = 50e6;
    static constexpr std::uint64_t kMemoryFloorBytes = std::uint64_t(1) << 30;
    static constexpr std::uint64_t kMemoryMultiple = 16;
    static constexpr std::uint64_t kMemoryPerThreadBytes = std::uint64_t(16) << 20;  // a thread's stack counts as data

    double transactionSeconds(std::uint64_t recordedWallNs, std::uint64_t snapshotBytes) const;
    // kMemoryFloorBytes + kMemoryPerThreadBytes x intra-op threads + kMemoryMultiple x
    // (program + largest snapshot + largest transaction).
    static std::uint64_t defaultMemoryLimit(std::uint64_t programBytes, std::uint64_t largestSnapshotBytes,
                                            std::uint64_t largestTransactionBytes, int intraOpThreads);
};

}  // namespace zkdv
