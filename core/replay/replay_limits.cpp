#include "zkdv/replay/replay_limits.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace zkdv {

std::uint64_t ReplayLimits::defaultMemoryLimit(std::uint64_t programBytes, std::uint64_t largestSnapshotBytes,
                                               std::uint64_t largestTransactionBytes, int intraOpThreads)
{
    constexpr std::uint64_t most = std::numeric_limits<std::uint64_t>::max() / (2 * kMemoryMultiple);
    const std::uint64_t tape = std::min(most, programBytes) + std::min(most, largestSnapshotBytes) + std::min(most, largestTransactionBytes);
    const std::uint64_t threads = static_cast<std::uint64_t>(std::clamp(intraOpThreads, 1, 4096));
    return kMemoryFloorBytes + kMemoryPerThreadBytes * threads + kMemoryMultiple * tape;
}

void TransactionBudget::measured(double seconds)
{
    if (!std::isfinite(seconds) || seconds < 0)
        seconds = 0;
    if (low_.empty() || seconds <= low_.top())
        low_.push(seconds);
    else
        high_.push(seconds);
    // The lower half holds the middle element when the count is odd.
    if (low_.size() > high_.size() + 1) {
        high_.push(low_.top());
        low_.pop();
    } else if (high_.size() > low_.size()) {
        low_.push(high_.top());
        high_.pop();
    }
}

double TransactionBudget::medianSeconds() const
{
    if (low_.empty())
        return 0;
    return low_.size() > high_.size() ? low_.top() : (low_.top() + high_.top()) / 2;
}

double TransactionBudget::seconds(std::uint64_t snapshotBytes) const
{
    const double work = measuredCount() == 0 ? std::max(limits_.transactionFloorSeconds, limits_.firstTransactionSeconds)
                                             : std::max(limits_.transactionFloorSeconds, limits_.timeFactor * medianSeconds());
    return work + ReplayLimits::snapshotSeconds(snapshotBytes);
}

}  // namespace zkdv
