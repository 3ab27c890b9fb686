#pragma once
// One transaction replayed on demand in one worker, as a replay replays it (its segment from
// the nearest snapshot, under the same time budget and memory limit), its values sent back:
// what the element comparison and zkdv-audit explain both run. Nothing is stored in the case.

#include <cstdint>
#include <string>

#include "zkdv/audit/replay_outcome.h"
#include "zkdv/replay/kernel_profile.h"
#include "zkdv/replay/replay_limits.h"
#include "zkdv/util/progress.h"

namespace zkdv {

class CaseStore;

struct SingleTransactionReplay {
    std::int64_t tapeId = 0;
    std::uint64_t index = 0;
    std::string device = "cpu";
    int intraOpThreads = 0;  // 0: as a replay (the tape's count on the CPU, else libtorch's own)
    KernelChoice kernels = KernelChoice::Recorded;
    bool captureDeltas = false;     // ReplaySegment::capture
    bool traceOperators = false;    // ReplaySegment::trace
    std::uint64_t extraMemory = 0;  // added to the default memory limit for what comes back
    ReplayLimits limits;
    std::string workerPath;   // "": found beside the executable
    std::string logSuffix;    // the worker log is CASE.<suffix>.log
    ProgressSink* progress = nullptr;  // may cancel (OperationCancelled)
    std::string progressPhase = "replaying";
    std::uint64_t progressBefore = 0;  // units done before this replay, of
    std::uint64_t progressTotal = 0;   // these in all (0: the segment's length)
};

struct SingleTransactionResult {
    TransactionOutcome outcome;
    std::string device;      // resolved ("cpu", "cuda:0")
    int intraOpThreads = 0;  // what the worker ran with
    std::uint64_t segmentLength = 0;
};

// The tape's transaction `index` must exist and have a snapshot to start from. Throws
// ReplayError when it cannot replay (no such transaction, no program, tape unreadable,
// device absent, the worker failed) and OperationCancelled.
SingleTransactionResult replaySingleTransaction(CaseStore& store, const SingleTransactionReplay& request);

// The length of the segment `index` is replayed in (for progress over several replays).
std::uint64_t singleTransactionSegmentLength(CaseStore& store, std::int64_t tapeId, std::uint64_t index);

}  // namespace zkdv
