#include "zkdv/replay/replay_plan.h"

#include <algorithm>

namespace zkdv {

std::uint64_t ReplayPlan::replayedTransactions() const
{
    std::uint64_t total = 0;
    for (const ReplaySegment& segment : segments)
        total += segment.length();
    return total;
}

ReplayPlan planReplay(const std::vector<std::uint64_t>& selected, std::uint64_t snapshotInterval, const std::vector<std::uint64_t>& snapshots,
                      std::vector<std::uint64_t>* unplannable)
{
    const std::uint64_t interval = std::max<std::uint64_t>(1, snapshotInterval);
    auto hasSnapshot = [&](std::uint64_t k) { return std::binary_search(snapshots.begin(), snapshots.end(), k); };
    ReplayPlan plan;
    for (std::uint64_t index : selected) {
        const std::uint64_t start = index / interval * interval;
        if (!plan.segments.empty() && plan.segments.back().snapshot == start) {
            plan.segments.back().selected.push_back(index);
            plan.segments.back().lastTransaction = index;
            continue;
        }
        if (!hasSnapshot(start)) {
            if (unplannable)
                unplannable->push_back(index);
            continue;
        }
        ReplaySegment segment;
        segment.snapshot = start;
        segment.lastTransaction = index;
        segment.selected.push_back(index);
        plan.segments.push_back(std::move(segment));
    }
    for (ReplaySegment& segment : plan.segments)
        segment.reachesNextSnapshot = segment.lastTransaction == segment.snapshot + interval - 1 && hasSnapshot(segment.snapshot + interval);
    return plan;
}

}  // namespace zkdv
