#include "zkdv/replay/replay_limits.h"

#include <algorithm>
#include <limits>

namespace zkdv {

double ReplayLimits::transactionSeconds(std::uint64_t recordedWallNs, std::uint64_t snapshotBytes) const
{
    const double recorded = std::min(static_cast<double>(recordedWallNs) * 1e-9, maxRecordedSeconds);
    return timeFactor * recorded + transactionFloorSeconds + static_cast<double>(snapshotBytes) / kSnapshotBytesPerSecond;
}

std::uint64_t ReplayLimits::defaultMemoryLimit(std::uint64_t programBytes, std::uint64_t largestSnapshotBytes,
                                               std::uint64_t largestTransactionBytes, int intraOpThreads)
{
    constexpr std::uint64_t most = std::numeric_limits<std::uint64_t>::max() / (2 * kMemoryMultiple);
    const std::uint64_t tape = std::min(most, programBytes) + std::min(most, largestSnapshotBytes) + std::min(most, largestTransactionBytes);
    const std::uint64_t threads = static_cast<std::uint64_t>(std::clamp(intraOpThreads, 1, 4096));
    return kMemoryFloorBytes + kMemoryPerThreadBytes * threads + kMemoryMultiple * tape;
}

}  // namespace zkdv
