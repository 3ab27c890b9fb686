#pragma once
// Runs a plan's segments in replay worker processes and hands their outcomes to the caller's
// thread: the containment of a replay (docs/replay.md, "Containment"). A worker that
// overruns its time budget is killed; one that crashes, runs out of memory or breaks the
// protocol is replaced; the transactions it left are `unverifiable` with the reason and its
// cause (the sealed program's, once the worker has said hello). The
// caller never waits longer than a budget and never sees the worker's output.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "zkdv/audit/replay_outcome.h"
#include "zkdv/audit/replay_plan.h"

#include "zkdv/replay/replay_limits.h"
#include "zkdv/replay/kernel_profile.h"
#include "zkdv/replay/worker_protocol.h"

namespace zkdv::worker {

class WorkerLog;
class WorkerProcess;

// Waits for the hello of a replay's first worker, started before the run is stored: it says
// which libtorch and devices the replay has. Throws Error (with the worker's exit status and
// last output) when none comes within `seconds`.
WorkerHello awaitHello(WorkerProcess& process, double seconds, WorkerLog& log);

// The snapshot bytes transaction `t` of `segment` reads besides its own record: the snapshot
// its segment starts from (first transaction) and the one it is compared with (last).
std::uint64_t segmentSnapshotBytes(const RecordPlan& records, const ReplaySegment& segment, std::uint64_t t);

struct WorkerPoolSetup {
    std::string executable;
    KernelProfile profile;          // the workers' kernel settings
    std::vector<std::uint8_t> job;  // encodeJob()
    unsigned workers = 1;           // processes at once
    std::uint64_t snapshotInterval = 1;
    std::uint64_t memoryLimitBytes = 0;  // as set in the job, for the messages
    // The auditor's limits: the start, and each transaction's budget (TransactionBudget).
    ReplayLimits limits;
    // The snapshot bytes a transaction of a segment reads besides its own record.
    std::function<std::uint64_t(const ReplaySegment&, std::uint64_t transaction)> snapshotBytes;
    WorkerLog* log = nullptr;
};

class ReplayWorkerPool {
public:
    // `started`: workers already running, the first of them past its hello (awaitHello).
    ReplayWorkerPool(const std::vector<ReplaySegment>& segments, WorkerPoolSetup setup,
                     std::vector<std::unique_ptr<WorkerProcess>> started = {});
    ~ReplayWorkerPool();

    // Runs every segment. `store` receives outcomes as they arrive (in index order per
    // call); `cancelled` is polled at least every 100 ms, and true kills the workers.
    // Returns false when cancelled. An exception from `store` kills the workers too.
    bool run(const std::function<void(std::vector<TransactionOutcome>&)>& store, const std::function<bool()>& cancelled);

private:
    struct Slot;
    void startWorkers();
    void assignOrFinish(Slot& slot);
    void handleMessages(Slot& slot);
    void startTransaction(Slot& slot, const ReplaySegment& segment);
    void workerEnded(Slot& slot, const std::string& why, UnverifiableCause cause);
    void failRemaining(const ReplaySegment& segment, std::uint64_t from, UnverifiableCause cause, const std::string& why);
    void failUnassigned(UnverifiableCause cause, const std::string& why);

    const std::vector<ReplaySegment>& segments_;
    WorkerPoolSetup setup_;
    std::vector<Slot> slots_;
    std::deque<std::size_t> unassigned_;  // segments no worker has, in plan order
    unsigned started_ = 0;  // workers started so far, numbering them in the log
    std::vector<TransactionOutcome> arrived_;
    std::vector<std::unique_ptr<WorkerProcess>> prestarted_;  // handed to the first slots
    TransactionBudget budget_;
};

}  // namespace zkdv::worker
