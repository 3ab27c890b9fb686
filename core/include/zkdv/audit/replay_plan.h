#pragma once
// Scheduling: the selected transactions grouped by snapshot segment, each segment replayed
// once from its snapshot up to its last selected transaction.

#include <cstdint>
#include <vector>

namespace zkdv {

struct ReplaySegment {
    std::uint64_t snapshot = 0;          // before_transaction of the snapshot it starts from
    std::uint64_t lastTransaction = 0;   // inclusive: replay runs snapshot .. lastTransaction
    std::vector<std::uint64_t> selected; // the selected transactions in this segment, ascending
    // True when the tape holds the snapshot right after lastTransaction (the next multiple of
    // the interval, or the final snapshot of a 1.5 tape), so the replayed state is compared
    // with it.
    bool reachesNextSnapshot = false;
    // Transactions whose recorded and replayed deltas come back with their outcomes
    // (TransactionOutcome::values), ascending; empty for an ordinary replay.
    std::vector<std::uint64_t> capture;
    // Transactions whose every operator comes back with its outputs (TransactionOutcome::
    // operators: zkdv-audit explain), ascending; empty for an ordinary replay.
    std::vector<std::uint64_t> trace;

    std::uint64_t length() const { return lastTransaction - snapshot + 1; }
};

struct ReplayPlan {
    std::vector<ReplaySegment> segments;  // ascending by snapshot
    std::uint64_t replayedTransactions() const;
};

// `selected` ascending and unique, each < transactionCount. `snapshots` lists the
// before_transaction values the tape holds (ascending). A selected transaction whose
// segment snapshot is missing goes into `unplannable` (it cannot be replayed).
ReplayPlan planReplay(const std::vector<std::uint64_t>& selected, std::uint64_t snapshotInterval,
                      const std::vector<std::uint64_t>& snapshots, std::vector<std::uint64_t>* unplannable = nullptr);

}  // namespace zkdv
