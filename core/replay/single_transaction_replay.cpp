#include "single_transaction_replay.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "replay_worker_pool.h"
#include "sealed_program_check.h"
#include "worker_log.h"
#include "worker_process.h"
#include "zkdv/audit/replay_plan.h"
#include "zkdv/replay/replay_device_check.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/replay/worker_protocol.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/tape/root_record.h"

namespace zkdv {

namespace {

struct PlannedTransaction {
    CaseTape tape;
    RootRecord root;
    std::uint64_t interval = 1;
    ReplaySegment segment;
};

PlannedTransaction planTransaction(CaseStore& store, ReplayStore& replayStore, std::int64_t tapeId, std::uint64_t index)
{
    PlannedTransaction planned;
    const std::optional<CaseTape> tape = store.tape(tapeId);
    if (!tape)
        throw ReplayError("case " + store.path() + " holds no tape with id " + std::to_string(tapeId));
    planned.tape = *tape;
    if (!replayStore.transactionRecord(tape->id, index))
        throw ReplayError("tape " + std::to_string(tape->id) + " has no transaction " + std::to_string(index));
    try {
        planned.root = RootRecord::parse(ByteSpan(std::string_view(tape->rootJson)));
    } catch (const Error& error) {
        throw ReplayError("tape " + std::to_string(tape->id) + "'s root record in the case does not parse: " + error.what());
    }
    planned.interval = static_cast<std::uint64_t>(std::max(1, tape->snapshotInterval));
    std::vector<std::uint64_t> unplannable;
    ReplayPlan plan = planReplay({index}, planned.interval, replayStore.snapshotTransactions(tape->id), &unplannable);
    if (!unplannable.empty() || plan.segments.size() != 1)
        throw ReplayError("the tape holds no snapshot to start transaction " + std::to_string(index) + "'s segment from");
    planned.segment = plan.segments.front();
    return planned;
}

}  // namespace

std::uint64_t singleTransactionSegmentLength(CaseStore& store, std::int64_t tapeId, std::uint64_t index)
{
    ReplayStore replayStore(store.database());
    return planTransaction(store, replayStore, tapeId, index).segment.length();
}

SingleTransactionResult replaySingleTransaction(CaseStore& store, const SingleTransactionReplay& request)
{
    ReplayStore replayStore(store.database());
    PlannedTransaction planned = planTransaction(store, replayStore, request.tapeId, request.index);
    const CaseTape& tape = planned.tape;
    const RootRecord& root = planned.root;
    ReplaySegment& segment = planned.segment;
    if (request.captureDeltas)
        segment.capture = {request.index};
    if (request.traceOperators)
        segment.trace = {request.index};

    std::string workerPath;
    const KernelProfile profile = kernelProfileFor(request.kernels, root.numerics, NumericEnvironment::hostCpu());
    std::vector<std::unique_ptr<worker::WorkerProcess>> started;
    try {
        workerPath = request.workerPath.empty() ? worker::findReplayWorker() : request.workerPath;
        started.push_back(std::make_unique<worker::WorkerProcess>(workerPath, profile));
    } catch (const Error& error) {
        throw ReplayError(error.what());
    }
    worker::WorkerLog log(store.path() + "." + request.logSuffix + ".log");
    CheckedProgram checked = checkSealedProgram(replayStore, root);
    if (checked.check != ProgramCheck::Matched)
        throw ReplayError(checked.problem);
    const std::vector<std::uint8_t> program = std::move(checked.bytes);

    worker::WorkerJob job;
    worker::RecordPlan& records = job.records;
    if (const std::string why = chooseRecordSource(tape, records.embedded); !why.empty())
        throw ReplayError(why);
    records.tapePath = tape.path;
    records.casePath = store.path();
    records.tapeId = tape.id;
    records.snapshotInterval = planned.interval;
    records.beforeFirstSnapshot = digestBeforeFirstSnapshot(tape, root, program);
    for (std::uint64_t k : {segment.snapshot, segment.lastTransaction + 1})
        if (auto ref = replayStore.snapshotRecord(tape.id, k))
            records.snapshots.emplace(k, *ref);
    for (std::uint64_t t = segment.snapshot == 0 ? 0 : segment.snapshot - 1; t <= segment.lastTransaction; ++t)
        if (auto ref = replayStore.transactionRecord(tape.id, t))
            records.transactions.emplace(t, *ref);

    worker::WorkerHello hello;
    try {
        hello = worker::awaitHello(*started.front(), request.limits.startSeconds, log);
        job.device = checkReplayDevice(request.device, hello.cudaDevices, hello.libtorchVersion, hello.cudaVersion);
    } catch (const Error& error) {
        throw ReplayError(error.what());
    }
    const bool cpu = job.device == "cpu";
    job.rootJson = tape.rootJson;
    job.intraOpThreads = request.intraOpThreads > 0             ? request.intraOpThreads
                         : cpu && root.intraOpThreads > 0 ? root.intraOpThreads
                                                          : hello.defaultIntraOpThreads;
    std::uint64_t largestSnapshot = 0, largestTransaction = 0;
    for (const auto& [k, ref] : records.snapshots)
        largestSnapshot = std::max(largestSnapshot, ref.frameSize);
    for (const auto& [t, ref] : records.transactions)
        largestTransaction = std::max(largestTransaction, ref.frameSize);
    if (cpu)
        job.memoryLimitBytes = request.limits.memoryLimitBytes
                                   ? request.limits.memoryLimitBytes
                                   : ReplayLimits::defaultMemoryLimit(program.size(), largestSnapshot, largestTransaction, job.intraOpThreads) +
                                         request.extraMemory;
    job.program = std::move(program);

    worker::WorkerPoolSetup setup;
    setup.executable = workerPath;
    setup.profile = profile;
    setup.workers = 1;
    setup.snapshotInterval = planned.interval;
    setup.memoryLimitBytes = job.memoryLimitBytes;
    setup.limits = request.limits;
    setup.snapshotBytes = [&records](const ReplaySegment& s, std::uint64_t t) { return worker::segmentSnapshotBytes(records, s, t); };
    setup.log = &log;
    setup.job = worker::encodeJob(job);

    SingleTransactionResult result;
    result.device = job.device;
    result.intraOpThreads = job.intraOpThreads;
    result.segmentLength = segment.length();
    std::optional<TransactionOutcome> found;
    std::uint64_t done = 0;
    const std::uint64_t total = request.progressTotal ? request.progressTotal : segment.length();
    const std::vector<ReplaySegment> segments = {segment};
    worker::ReplayWorkerPool pool(segments, std::move(setup), std::move(started));
    const bool finished = pool.run(
        [&](std::vector<TransactionOutcome>& outcomes) {
            for (TransactionOutcome& outcome : outcomes) {
                if (outcome.index == request.index)
                    found = std::move(outcome);
                ++done;
            }
            if (request.progress)
                request.progress->report(request.progressBefore + done, total, request.progressPhase);
        },
        [&] { return request.progress && request.progress->cancelRequested(); });
    if (!finished)
        throw OperationCancelled();
    if (!found)
        throw ReplayError("the replay of transaction " + std::to_string(request.index) + " brought no outcome back");
    result.outcome = std::move(*found);
    return result;
}

}  // namespace zkdv
