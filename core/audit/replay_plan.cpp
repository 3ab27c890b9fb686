#include "zkdv/audit/replay_plan.h"

#include <algorithm>

namespace zkdv {

std::uint64_t ReplayPlan::replayedTransactions() const
{
    std::uint64_t total = 0;
    for (const ReplaySegment& segment : segments)
        total += segment.length();
    return total;
}

ReplayPlan planReplay(const std::vector<std::uint64_t>& selected, std::uint64_t snapshotInterval,
                      const std::vector<std::uint64_t>& snapshots, std::vector<std::uint64_t>* unplannable)
{
    // An interval of 0 (no snapshots promised) degrades to one-transaction segments, each
    // replayable only where the tape happens to hold a snapshot before it.
    const std::uint64_t interval = std::max<std::uint64_t>(1, snapshotInterval);
    auto hasSnapshot = [&](std::uint64_t k) { return std::binary_search(snapshots.begin(), snapshots.end(), k); };

    // The header asks for ascending, unique input; tolerate anything else rather than plan
    // a segment twice.
    std::vector<std::uint64_t> ordered = selected;
    if (!std::is_sorted(ordered.begin(), ordered.end()) || std::adjacent_find(ordered.begin(), ordered.end()) != ordered.end()) {
        std::sort(ordered.begin(), ordered.end());
        ordered.erase(std::unique(ordered.begin(), ordered.end()), ordered.end());
    }

    ReplayPlan plan;
    for (std::size_t i = 0; i < ordered.size();) {
        const std::uint64_t segmentIndex = ordered[i] / interval;
        std::size_t end = i;
        while (end < ordered.size() && ordered[end] / interval == segmentIndex)
            ++end;
        const std::uint64_t start = segmentIndex * interval;
        if (!hasSnapshot(start)) {
            if (unplannable)
                unplannable->insert(unplannable->end(), ordered.begin() + static_cast<std::ptrdiff_t>(i),
                                    ordered.begin() + static_cast<std::ptrdiff_t>(end));
        } else {
            ReplaySegment segment;
            segment.snapshot = start;
            segment.selected.assign(ordered.begin() + static_cast<std::ptrdiff_t>(i),
                                    ordered.begin() + static_cast<std::ptrdiff_t>(end));
            segment.lastTransaction = segment.selected.back();
            // The snapshot after the segment's last transaction: the next multiple of the
            // interval, or, on a tape of format 1.5 or later, the final snapshot after a last
            // segment that ends before it (spec 2.4). Snapshots lie nowhere else.
            const std::uint64_t after = segment.lastTransaction + 1;
            segment.reachesNextSnapshot = after > segment.lastTransaction  // no wrap
                                          && hasSnapshot(after);
            plan.segments.push_back(std::move(segment));
        }
        i = end;
    }
    return plan;
}

}  // namespace zkdv
