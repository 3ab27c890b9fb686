#include "zkdv/replay/replay_runner.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>
#include <sys/utsname.h>

#include "replay_worker_pool.h"
#include "worker_log.h"
#include "worker_process.h"
#include "zkdv/audit/replay_plan.h"
#include "zkdv/graph/exported_graph.h"
#include "zkdv/replay/replay_device_check.h"
#include "zkdv/replay/worker_protocol.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/tape/record_frame.h"
#include "zkdv/tape/record_reader.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/mapped_file.h"

namespace zkdv {

namespace {

using Clock = std::chrono::steady_clock;

std::string operatingSystem()
{
    utsname name{};
    if (uname(&name) != 0)
        return "unknown";
    return std::string(name.sysname) + " " + name.release + " " + name.machine;
}

std::vector<std::uint8_t> readWholeFile(const std::string& path)
{
    try {
        const MappedFile file(path);  // refuses FIFOs and devices instead of waiting on them
        return std::vector<std::uint8_t>(file.bytes().begin(), file.bytes().end());
    } catch (const IoError& error) {
        throw ReplayError(std::string("cannot read program file: ") + error.what());
    }
}

// Record locations for every record the plan reads, for the workers.
void indexRecords(ReplayStore& store, std::int64_t tapeId, const ReplayPlan& plan, worker::RecordPlan& records)
{
    for (const ReplaySegment& segment : plan.segments) {
        for (std::uint64_t k : {segment.snapshot, segment.lastTransaction + 1})
            if (auto ref = store.snapshotRecord(tapeId, k))
                records.snapshots.emplace(k, *ref);
        // The transaction before a snapshot links it into the chain (embedded payloads).
        for (std::uint64_t t = segment.snapshot == 0 ? 0 : segment.snapshot - 1; t <= segment.lastTransaction; ++t)
            if (auto ref = store.transactionRecord(tapeId, t))
                records.transactions.emplace(t, *ref);
    }
}

// Each transaction's time budget: its recorded wall time scaled, plus reading the snapshot
// the segment starts from (first transaction) or is compared with (last).
std::map<std::uint64_t, double> transactionBudgets(ReplayStore& store, std::int64_t tapeId, const ReplayPlan& plan,
                                                   const worker::RecordPlan& records, const ReplayLimits& limits)
{
    std::map<std::uint64_t, double> budgets;
    auto snapshotBytes = [&](std::uint64_t k) {
        auto it = records.snapshots.find(k);
        return it == records.snapshots.end() ? std::uint64_t(0) : it->second.frameSize;
    };
    for (const ReplaySegment& segment : plan.segments)
        for (std::uint64_t t = segment.snapshot; t <= segment.lastTransaction; ++t) {
            std::uint64_t bytes = t == segment.snapshot ? snapshotBytes(t) : 0;
            if (t == segment.lastTransaction && segment.reachesNextSnapshot)
                bytes += snapshotBytes(t + 1);
            budgets[t] = limits.transactionSeconds(store.recordedWallTimeNs(tapeId, t), bytes);
        }
    return budgets;
}

// The digest the first snapshot links to: the program record's, or the root's when the
// program travels apart from the tape.
Digest digestBeforeFirstSnapshot(const CaseTape& tape, const RootRecord& root, const std::vector<std::uint8_t>& program)
{
    Sha256 hasher;
    const ByteSpan rootPayload(std::string_view(tape.rootJson));
    const Digest rootDigest = frameDigest(
        frameHeader(static_cast<std::uint32_t>(tape::RecordType::Root), tape::kFlagCritical, rootPayload.size,
                    genesisDigest(static_cast<std::uint16_t>(root.formatMajor), static_cast<std::uint16_t>(root.formatMinor))),
        {rootPayload}, hasher);
    if (!root.programEmbedded)
        return rootDigest;
    return frameDigest(frameHeader(static_cast<std::uint32_t>(tape::RecordType::Program), tape::kFlagCritical, program.size(), rootDigest),
                       {ByteSpan(program)}, hasher);
}

TransactionOutcome unverifiableOutcome(std::uint64_t index, std::uint64_t interval, bool selected, const std::string& why)
{
    TransactionOutcome outcome;
    outcome.index = index;
    outcome.segment = index / interval;
    outcome.selected = selected;
    outcome.verdict = Verdict::Unverifiable;
    outcome.detail = why;
    return outcome;
}

}  // namespace

ReplaySummary runReplay(CaseStore& store, const ReplayRequest& request)
{
    const auto started = Clock::now();
    ReplayStore replayStore(store.database());

    // Which tape.
    std::optional<CaseTape> tape;
    if (request.tapeId != 0) {
        tape = store.tape(request.tapeId);
        if (!tape)
            throw ReplayError("case " + store.path() + " holds no tape with id " + std::to_string(request.tapeId));
    } else {
        std::vector<CaseTape> tapes = store.tapes();
        if (tapes.empty())
            throw ReplayError("case " + store.path() + " holds no tape; ingest one first");
        if (tapes.size() > 1)
            throw ReplayError("case " + store.path() + " holds " + std::to_string(tapes.size()) + " tapes; choose one with --tape ID");
        tape = tapes.front();
    }
    RootRecord root;
    try {
        root = RootRecord::parse(ByteSpan(std::string_view(tape->rootJson)));
    } catch (const Error& error) {
        throw ReplayError("tape " + std::to_string(tape->id) + "'s root record in the case does not parse: " + error.what());
    }

    std::string workerPath;
    try {
        workerPath = request.workerPath.empty() ? worker::findReplayWorker() : request.workerPath;
    } catch (const Error& error) {
        throw ReplayError(error.what());
    }
    worker::WorkerLog log;

    // What to replay, and in which segments.
    const bool cpu = request.device == "cpu";
    SelectionInput input = replayStore.selectionInput(tape->id, request.selection.kind == SelectionSpec::Kind::TopQ);
    std::vector<std::uint64_t> selected;
    try {
        selected = selectTransactions(request.selection, request.seed, input);
    } catch (const SelectionError& error) {
        throw ReplayError(error.what());
    }
    std::vector<std::uint64_t> unplannable;
    const ReplayPlan plan = planReplay(selected, input.snapshotInterval, replayStore.snapshotTransactions(tape->id), &unplannable);

    // The workers start now: their libtorch initialises while the program is checked, and the
    // first one's hello says which libtorch and devices there are (this process loads neither
    // libtorch nor the program). How many is known here unless the thread count is libtorch's
    // default; then the others start after the hello.
    auto workerCount = [&](int intraOpThreads) {
        unsigned count = 1;
        if (cpu) {
            const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
            // A worker is a process of its own (~200 MB with libtorch): at most one per core.
            count = request.threads > 0 ? std::min(request.threads, cores)
                                        : std::max(1u, cores / static_cast<unsigned>(std::max(1, intraOpThreads)));
        }
        return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(count, plan.segments.size())));
    };
    const int knownIntraOp = request.intraOpThreads > 0 ? request.intraOpThreads : cpu && root.intraOpThreads > 0 ? root.intraOpThreads : 0;
    std::vector<std::unique_ptr<worker::WorkerProcess>> prestarted;
    try {
        for (unsigned w = 0, n = knownIntraOp > 0 ? workerCount(knownIntraOp) : 1; w < n; ++w)
            prestarted.push_back(std::make_unique<worker::WorkerProcess>(workerPath));
    } catch (const Error& error) {
        throw ReplayError(error.what());
    }

    // The program, checked before anything runs.
    std::string problem;
    std::vector<std::uint8_t> program;
    if (root.programKind != "torchscript" && root.programKind != kExportedGraphKind) {
        problem = "the tape's program is of kind '" + root.programKind + "', which cannot be replayed";
    } else {
        std::optional<std::vector<std::uint8_t>> bytes;
        if (!request.programPath.empty())
            bytes = readWholeFile(request.programPath);
        else
            bytes = replayStore.programBytes(toHex(root.programSha256));
        if (!bytes) {
            problem = "the sealed program (sha256 " + toHex(root.programSha256) +
                      ") is not in the case; add it with `zkdv-audit ingest PROGRAM --case CASE` or pass --program PROGRAM";
        } else {
            const std::string found = toHex(Sha256::of(ByteSpan(*bytes)));
            if (found != toHex(root.programSha256))
                problem = "program digest mismatch: the tape commits to sha256 " + toHex(root.programSha256) + ", the program supplied has " +
                          found + "; refusing to run it";
            else
                program = std::move(*bytes);
        }
    }
    // Payloads come from the tape file while it is the one ingested, else from the case.
    std::unique_ptr<RecordReader> reader;
    bool embedded = false;
    if (problem.empty() && !plan.segments.empty()) {
        std::string why;
        try {
            reader = std::make_unique<RecordReader>(tape->path);
            if (reader->size() != tape->size) {
                why = "the tape file " + tape->path + " has " + std::to_string(reader->size()) + " bytes, the ingested tape " +
                      std::to_string(tape->size);
                reader.reset();
            }
        } catch (const Error& error) {
            why = error.what();
        }
        if (!reader) {
            embedded = tape->embedded;
            if (!embedded)
                problem = "the tape's records cannot be read: " + why + "; restore the file, or ingest it with --embed";
        }
    }

    worker::WorkerHello hello;
    std::string device;
    try {
        hello = worker::awaitHello(*prestarted.front(), request.limits.startSeconds, log);
        device = checkReplayDevice(request.device, hello.cudaDevices, hello.libtorchVersion, hello.cudaVersion);
    } catch (const Error& error) {
        throw ReplayError(error.what());
    }

    // The trainer's thread count reproduces its CPU reductions bit for bit.
    const int intraOp = request.intraOpThreads > 0                  ? request.intraOpThreads
                        : cpu && root.intraOpThreads > 0           ? root.intraOpThreads
                                                                     : hello.defaultIntraOpThreads;
    const unsigned workers = workerCount(intraOp);

    ReplayRunInfo info;
    info.tapeId = tape->id;
    info.device = device;
    info.libtorchVersion = hello.libtorchVersion;
    info.selection = request.selection.toString();
    info.seed = request.seed;
    info.tolerance = request.tolerance.toString();
    info.threads = workers;
    info.intraOpThreads = intraOp;
    info.selectedCount = selected.size();
    info.environmentJson = toJsonText(nlohmann::json{{"os", operatingSystem()},
                                                     {"libtorch", hello.libtorchVersion},
                                                     {"cuda", hello.cudaVersion},
                                                     {"cuda_devices", hello.cudaDevices},
                                                     {"deterministic_algorithms", true},
                                                     {"program_sha256", toHex(root.programSha256)},
                                                     {"tape_chain_head", tape->chainHead}});

    ReplaySummary summary;
    summary.tapeId = tape->id;
    summary.device = device;
    summary.selection = info.selection;
    summary.seed = request.seed;
    summary.transactionCount = input.transactionCount;
    summary.selected = selected;
    summary.problem = problem;
    summary.runId = replayStore.beginRun(info);
    log.setPath(request.workerLogPath.empty() ? store.path() + ".replay-" + std::to_string(summary.runId) + ".log" : request.workerLogPath);

    std::uint64_t done = 0;
    const std::uint64_t total = plan.replayedTransactions() + unplannable.size();
    auto record = [&](std::vector<TransactionOutcome>& outcomes) {
        if (outcomes.empty())
            return;
        replayStore.storeOutcomes(summary.runId, outcomes);
        for (const TransactionOutcome& outcome : outcomes) {
            switch (outcome.verdict) {
            case Verdict::Exact: ++summary.exact; break;
            case Verdict::WithinTolerance: ++summary.withinTolerance; break;
            case Verdict::Diverged: ++summary.diverged; break;
            case Verdict::Unverifiable: ++summary.unverifiable; break;
            }
            ++summary.replayed;
            keepFirstFailure(summary.firstFailures, outcome);
            if (request.onOutcome)
                request.onOutcome(outcome);
        }
        done += outcomes.size();
        if (request.progress)
            request.progress->report(done, total, "replaying");
    };

    std::vector<TransactionOutcome> pending;
    for (std::uint64_t index : unplannable)
        pending.push_back(unverifiableOutcome(index, input.snapshotInterval, true,
                                              "the tape holds no snapshot to start this transaction's segment from"));
    if (!problem.empty()) {
        for (const ReplaySegment& segment : plan.segments)
            for (std::uint64_t index : segment.selected)
                pending.push_back(unverifiableOutcome(index, input.snapshotInterval, true, problem));
        record(pending);
        summary.sealProblem = replayStore.finishRun(summary.runId, "finished", problem);
        summary.status = "finished";
    } else {
        record(pending);
        worker::WorkerJob job;
        job.rootJson = tape->rootJson;
        job.device = device;
        job.intraOpThreads = intraOp;
        job.tolerance = request.tolerance;
        worker::RecordPlan& records = job.records;
        records.embedded = embedded;
        records.tapePath = tape->path;
        records.casePath = store.path();
        records.tapeId = tape->id;
        records.snapshotInterval = input.snapshotInterval;
        records.beforeFirstSnapshot = digestBeforeFirstSnapshot(*tape, root, program);
        indexRecords(replayStore, tape->id, plan, records);
        const std::map<std::uint64_t, double> budgets = transactionBudgets(replayStore, tape->id, plan, records, request.limits);
        std::uint64_t largestSnapshot = 0, largestTransaction = 0;
        for (const auto& [k, ref] : records.snapshots)
            largestSnapshot = std::max(largestSnapshot, ref.frameSize);
        for (const auto& [t, ref] : records.transactions)
            largestTransaction = std::max(largestTransaction, ref.frameSize);
        if (cpu)
            job.memoryLimitBytes = request.limits.memoryLimitBytes
                                       ? request.limits.memoryLimitBytes
                                       : ReplayLimits::defaultMemoryLimit(program.size(), largestSnapshot, largestTransaction, intraOp);
        job.program = std::move(program);

        worker::WorkerPoolSetup setup;
        setup.workers = workers;
        setup.snapshotInterval = input.snapshotInterval;
        setup.memoryLimitBytes = job.memoryLimitBytes;
        setup.startSeconds = request.limits.startSeconds;
        setup.transactionSeconds = [&](const ReplaySegment&, std::uint64_t t) {
            auto it = budgets.find(t);
            return it == budgets.end() ? request.limits.transactionFloorSeconds : it->second;
        };
        setup.log = &log;
        bool cancelled = false;
        setup.executable = workerPath;
        try {
            setup.job = worker::encodeJob(job);
            worker::ReplayWorkerPool pool(plan.segments, std::move(setup), std::move(prestarted));
            cancelled = !pool.run(record, [&] { return request.progress && request.progress->cancelRequested(); });
        } catch (const std::exception& error) {
            // The run's problem names the cause, as the exception does for the caller.
            replayStore.finishRun(summary.runId, "failed", std::string("the replay stopped: ") + error.what());
            throw;
        } catch (...) {
            replayStore.finishRun(summary.runId, "failed", "the replay stopped on an exception that is not a std::exception");
            throw;
        }
        summary.status = cancelled ? "cancelled" : "finished";
        summary.sealProblem = replayStore.finishRun(summary.runId, summary.status, "");
    }
    summary.workerLog = log.writtenPath();
    summary.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return summary;
}

}  // namespace zkdv
