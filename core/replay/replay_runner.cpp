#include "zkdv/replay/replay_runner.h"
#include "zkdv/replay/planned_audit_request.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cxxabi.h>
#include <fstream>
#include <iterator>
#include <map>
#include <thread>
#include <typeinfo>

#include <nlohmann/json.hpp>
#include <sys/utsname.h>

#include "replay_worker_pool.h"
#include "sealed_program_check.h"
#include "worker_log.h"
#include "worker_process.h"
#include "zkdv/audit/numeric_regime.h"
#include "zkdv/audit/replay_plan.h"
#include "zkdv/graph/exported_graph.h"
#include "zkdv/replay/replay_device_check.h"
#include "zkdv/replay/worker_protocol.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/planned_audits.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/tape_location.h"
#include "zkdv/tape/record_frame.h"
#include "zkdv/tape/record_reader.h"
#include "zkdv/util/auditor_key.h"
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

TransactionOutcome unverifiableOutcome(std::uint64_t index, std::uint64_t interval, bool selected, UnverifiableCause cause, const std::string& why)
{
    TransactionOutcome outcome;
    outcome.index = index;
    outcome.segment = index / interval;
    outcome.selected = selected;
    outcome.verdict = Verdict::Unverifiable;
    outcome.cause = cause;
    outcome.detail = why;
    return outcome;
}

// Which tape: the one asked for, or the case's only one.
CaseTape chooseTape(CaseStore& store, std::int64_t tapeId)
{
    if (tapeId != 0) {
        std::optional<CaseTape> tape = store.tape(tapeId);
        if (!tape)
            throw ReplayError("case " + store.path() + " holds no tape with id " + std::to_string(tapeId));
        return *tape;
    }
    std::vector<CaseTape> tapes = store.tapes();
    if (tapes.empty())
        throw ReplayError("case " + store.path() + " holds no tape; ingest one first");
    if (tapes.size() > 1)
        throw ReplayError("case " + store.path() + " holds " + std::to_string(tapes.size()) + " tapes; choose one with --tape ID");
    return tapes.front();
}

RootRecord parseRoot(const CaseTape& tape)
{
    try {
        return RootRecord::parse(ByteSpan(std::string_view(tape.rootJson)));
    } catch (const Error& error) {
        throw ReplayError("tape " + std::to_string(tape.id) + "'s root record in the case does not parse: " + error.what());
    }
}

std::string replayWorkerPath(const ReplayRequest& request)
{
    try {
        return request.workerPath.empty() ? worker::findReplayWorker() : request.workerPath;
    } catch (const Error& error) {
        throw ReplayError(error.what());
    }
}

// What to replay, and in which segments.
struct PlannedReplay {
    SelectionInput input;
    std::vector<std::uint64_t> selected;
    std::vector<std::uint64_t> unplannable;  // selected, but no snapshot starts their segment
    ReplayPlan plan;
};

PlannedReplay planSelection(ReplayStore& replayStore, std::int64_t tapeId, const ReplayRequest& request)
{
    PlannedReplay planned;
    planned.input = replayStore.selectionInput(tapeId, request.selection.kind == SelectionSpec::Kind::TopQ);
    try {
        planned.selected = selectTransactions(request.selection, *request.seed, planned.input);
    } catch (const SelectionError& error) {
        throw ReplayError(error.what());
    }
    planned.plan = planReplay(planned.selected, planned.input.snapshotInterval, replayStore.snapshotTransactions(tapeId), &planned.unplannable);
    return planned;
}

ShardPlan splitIntoShards(ReplayStore& replayStore, std::int64_t tapeId, const ReplayPlan& plan, unsigned count)
{
    try {
        return planShards(plan, replayStore.transactionWallTimes(tapeId), count);
    } catch (const Error& error) {
        throw ReplayError(error.what());
    }
}

std::vector<std::uint64_t> shardSelection(const ReplayPlan& shardPlan, const std::vector<std::uint64_t>& unplannable, unsigned index)
{
    std::vector<std::uint64_t> selected;
    for (const ReplaySegment& segment : shardPlan.segments)
        selected.insert(selected.end(), segment.selected.begin(), segment.selected.end());
    if (index == 0)
        selected.insert(selected.end(), unplannable.begin(), unplannable.end());
    std::sort(selected.begin(), selected.end());
    return selected;
}

// Narrows `planned` to one shard of it: its segments, and the unplannable transactions only
// in shard 0, so that the shards together report every selected transaction once.
void narrowToShard(PlannedReplay& planned, ReplayStore& replayStore, std::int64_t tapeId, const ShardSpec& spec)
{
    const ShardPlan shards = splitIntoShards(replayStore, tapeId, planned.plan, spec.count);
    planned.plan = shards.shardPlan(planned.plan, spec.index);
    if (spec.index != 0)
        planned.unplannable.clear();
    planned.selected = shardSelection(planned.plan, planned.unplannable, spec.index);
}

// The trainer's thread count reproduces its CPU reductions bit for bit; 0 while only the
// worker's hello can tell (libtorch's default).
int intraOpThreadsOf(const ReplayRequest& request, const RootRecord& root, int libtorchDefault)
{
    if (request.intraOpThreads > 0)
        return request.intraOpThreads;
    if (request.device == "cpu" && root.intraOpThreads > 0)
        return root.intraOpThreads;
    return libtorchDefault;
}

unsigned workerCount(const ReplayRequest& request, const ReplayPlan& plan, int intraOpThreads)
{
    unsigned count = 1;
    if (request.device == "cpu") {
        const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        // A worker is a process of its own (~200 MB with libtorch): at most one per core.
        count = request.threads > 0 ? std::min(request.threads, cores) : std::max(1u, cores / static_cast<unsigned>(std::max(1, intraOpThreads)));
    }
    return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(count, plan.segments.size())));
}

// The workers start before the program is checked: their libtorch initialises meanwhile,
// and the first one's hello says which libtorch and devices there are (this process loads
// neither libtorch nor the program). How many is known here unless the thread count is
// libtorch's default; then the others start after the hello.
std::vector<std::unique_ptr<worker::WorkerProcess>> prestartWorkers(const std::string& workerPath, const ReplayRequest& request,
                                                                     const RootRecord& root, const ReplayPlan& plan,
                                                                     const KernelProfile& profile)
{
    const int knownIntraOp = intraOpThreadsOf(request, root, 0);
    std::vector<std::unique_ptr<worker::WorkerProcess>> prestarted;
    try {
        for (unsigned w = 0, n = knownIntraOp > 0 ? workerCount(request, plan, knownIntraOp) : 1; w < n; ++w)
            prestarted.push_back(std::make_unique<worker::WorkerProcess>(workerPath, profile));
    } catch (const Error& error) {
        throw ReplayError(error.what());
    }
    return prestarted;
}

// The workers' numerical environment at the run's thread count: with the tape's, it decides
// the run's regime (each worker decides the same from the same two environments).
NumericEnvironment runNumerics(const worker::WorkerHello& hello, int intraOp)
{
    NumericEnvironment numerics = hello.numerics;
    numerics.intraOpThreads = intraOp;
    return numerics;
}

ReplayRunInfo runInfo(const CaseTape& tape, const RootRecord& root, const ReplayRequest& request, const worker::WorkerHello& hello,
                      const std::string& device, unsigned workers, int intraOp, std::size_t selectedCount, const KernelProfile& profile)
{
    ReplayRunInfo info;
    info.tapeId = tape.id;
    info.device = device;
    info.libtorchVersion = hello.libtorchVersion;
    info.selection = request.selection.toString();
    info.seed = *request.seed;
    info.seedSource = request.seedSource;
    info.tolerance = request.tolerance.toString();
    info.threads = workers;
    info.intraOpThreads = intraOp;
    info.selectedCount = selectedCount;
    const NumericEnvironment numerics = runNumerics(hello, intraOp);
    const DeterminismProfile determinism = worker::workerDeterminism(root, hello, device, intraOp);
    const RegimeChoice regime = chooseRegime(root, ReplayEnvironment{numerics, determinism, hello.libtorchVersion});
    info.environmentJson = toJsonText(nlohmann::json{{"os", operatingSystem()},
                                                     {"libtorch", hello.libtorchVersion},
                                                     {"cuda", hello.cudaVersion},
                                                     {"cuda_devices", hello.cudaDevices},
                                                     {"deterministic_algorithms", true},
                                                     {"program_sha256", toHex(root.programSha256)},
                                                     {"tape_chain_head", tape.chainHead},
                                                     {"numerics", nlohmann::json::parse(numerics.toJson())},
                                                     {"determinism", nlohmann::json::parse(determinism.toJson())},
                                                     {"regime", regimeName(regime.regime)},
                                                     {"regime_reason", regime.reason},
                                                     {"kernel_profile", nlohmann::json::parse(profile.toJson())}});
    return info;
}

// The envelope the run judged by and where it came from, added to the stored environment.
std::string withEnvelope(const std::string& environmentJson, const EnvelopeChoice& choice)
{
    nlohmann::json environment = nlohmann::json::parse(environmentJson);
    environment["envelope"] = choice.envelope;
    environment["envelope_source"] = choice.source;
    environment["envelope_note"] = choice.note;
    if (choice.calibration) {
        const EnvelopeCalibration& c = choice.calibration->calibration;
        environment["calibration"] = {{"path", choice.calibration->path},
                                      {"sha256", choice.calibration->sha256},
                                      {"used", choice.calibrationUsed},
                                      {"samples", c.samples()},
                                      {"quantile", c.version >= 2 ? "robust" : "max"},
                                      {"quantile_level", c.quantileLevel()},
                                      {"max_ratio", c.maxRatio()},
                                      {"safety_factor", kCalibrationSafetyFactor},
                                      {"created_at", c.createdAt},
                                      {"recorded_torch", c.pair.recordedTorch},
                                      {"replay_libtorch", c.pair.replayLibtorch},
                                      {"device", c.pair.device}};
    }
    return toJsonText(environment);
}

// Stores each batch of outcomes, counts them into the summary and reports progress.
class OutcomeRecorder {
public:
    OutcomeRecorder(ReplayStore& replayStore, const ReplayRequest& request, ReplaySummary& summary, std::uint64_t total)
        : replayStore_(replayStore), request_(request), summary_(summary), total_(total)
    {
    }

    void operator()(std::vector<TransactionOutcome>& outcomes)
    {
        if (outcomes.empty())
            return;
        replayStore_.storeOutcomes(summary_.runId, outcomes);
        for (const TransactionOutcome& outcome : outcomes) {
            switch (outcome.verdict) {
            case Verdict::Exact: ++summary_.exact; break;
            case Verdict::WithinTolerance: ++summary_.withinTolerance; break;
            case Verdict::Diverged: ++summary_.diverged; break;
            case Verdict::Unverifiable:
                ++summary_.unverifiable;
                summary_.trainersFailures += blamesTrainer(outcome.cause) ? 1 : 0;
                break;
            }
            ++summary_.replayed;
            keepFirstFailure(summary_.firstFailures, outcome);
            if (request_.onOutcome)
                request_.onOutcome(outcome);
        }
        done_ += outcomes.size();
        if (request_.progress)
            request_.progress->report(done_, total_, "replaying");
    }

private:
    ReplayStore& replayStore_;
    const ReplayRequest& request_;
    ReplaySummary& summary_;
    std::uint64_t total_;
    std::uint64_t done_ = 0;
};

// What every worker is told: the tape, the program, the device, where each record lies and
// how much memory a worker may use.
worker::WorkerJob workerJob(CaseStore& store, ReplayStore& replayStore, const CaseTape& tape, const RootRecord& root,
                            const PlannedReplay& planned, std::vector<std::uint8_t> program, bool embedded, const std::string& device,
                            int intraOp, const ReplayRequest& request)
{
    worker::WorkerJob job;
    job.rootJson = tape.rootJson;
    job.device = device;
    job.intraOpThreads = intraOp;
    job.tolerance = request.tolerance;
    job.noiseEnvelope = request.noiseEnvelope;
    worker::RecordPlan& records = job.records;
    records.embedded = embedded;
    records.tapePath = tape.path;
    records.casePath = store.path();
    records.tapeId = tape.id;
    records.snapshotInterval = planned.input.snapshotInterval;
    records.beforeFirstSnapshot = digestBeforeFirstSnapshot(tape, root, program);
    indexRecords(replayStore, tape.id, planned.plan, records);
    std::uint64_t largestSnapshot = 0, largestTransaction = 0;
    for (const auto& [k, ref] : records.snapshots)
        largestSnapshot = std::max(largestSnapshot, ref.frameSize);
    for (const auto& [t, ref] : records.transactions)
        largestTransaction = std::max(largestTransaction, ref.frameSize);
    if (request.device == "cpu")
        job.memoryLimitBytes = request.limits.memoryLimitBytes
                                   ? request.limits.memoryLimitBytes
                                   : ReplayLimits::defaultMemoryLimit(program.size(), largestSnapshot, largestTransaction, intraOp);
    job.program = std::move(program);
    return job;
}

// The type of the exception being handled, for a cause that is not a std::exception.
std::string currentExceptionType()
{
    const std::type_info* type = abi::__cxa_current_exception_type();
    if (!type)
        return "unknown";
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(type->name(), nullptr, nullptr, &status), std::free);
    return status == 0 && demangled ? demangled.get() : type->name();
}

// Runs the plan's segments on the worker pool; false when the progress sink stopped it.
// A failure marks the run failed, naming its cause, and goes on to the caller.
bool replaySegments(ReplayStore& replayStore, std::int64_t runId, const PlannedReplay& planned, worker::WorkerPoolSetup setup,
                    std::vector<std::unique_ptr<worker::WorkerProcess>> prestarted, OutcomeRecorder& record, const ReplayRequest& request)
{
    auto recordBatch = [&](std::vector<TransactionOutcome>& outcomes) { record(outcomes); };
    try {
        worker::ReplayWorkerPool pool(planned.plan.segments, std::move(setup), std::move(prestarted));
        return pool.run(recordBatch, [&] { return request.progress && request.progress->cancelRequested(); });
    } catch (const std::exception& error) {
        // The run's problem names the cause, as the exception does for the caller.
        replayStore.finishRun(runId, RunStatus::Failed, std::string("the replay stopped: ") + error.what());
        throw;
    } catch (...) {
        replayStore.finishRun(runId, RunStatus::Failed, "the replay stopped on an exception of type " + currentExceptionType() +
                                                   ", which is not a std::exception");
        throw;
    }
}

}  // namespace

ShardedReplay planShardedReplay(CaseStore& store, const ReplayRequest& request, unsigned shards)
{
    if (!request.seed)
        throw ReplayError("a sharded replay needs its seed given (--seed S): every shard must draw the same selection");
    ReplayStore replayStore(store.database());
    const CaseTape tape = chooseTape(store, request.tapeId);
    PlannedReplay planned = planSelection(replayStore, tape.id, request);
    ShardedReplay sharded;
    sharded.tapeId = tape.id;
    sharded.selected = std::move(planned.selected);
    sharded.unplannable = std::move(planned.unplannable);
    sharded.plan = std::move(planned.plan);
    sharded.shards = splitIntoShards(replayStore, tape.id, sharded.plan, shards);
    return sharded;
}

PlannedAudit plannedAuditOf(CaseStore& store, const ReplayRequest& request, unsigned shards)
{
    if (!request.seed)
        throw ReplayError("a sharded replay needs its seed given (--seed S): every shard must draw the same selection");
    if (shards < 1 || shards > kMaxShards)
        throw ReplayError("a sharded replay needs 1 to " + std::to_string(kMaxShards) + " shards, not " + std::to_string(shards));
    ReplayStore replayStore(store.database());
    const CaseTape tape = chooseTape(store, request.tapeId);
    PlannedAudit audit;
    audit.tapeId = tape.id;
    audit.chainHead = tape.chainHead;
    audit.tapeSize = tape.size;
    audit.selection = request.selection.toString();
    audit.seed = *request.seed;
    audit.seedSource = request.seedSource;
    audit.shardCount = shards;
    audit.tolerance = request.tolerance.toString();
    audit.calibrationSha256 = request.calibration ? request.calibration->sha256 : std::string();
    // What each shard's replay will find: its shard case carries the case's program, and the
    // job gives it no other.
    audit.programCheck = checkSealedProgram(replayStore, parseRoot(tape), request.programPath).check;
    return audit;
}

PlannedAudit recordPlannedAudit(CaseStore& store, const ReplayRequest& request, unsigned shards)
{
    const ShardedReplay sharded = planShardedReplay(store, request, shards);
    ReplayRequest planned = request;
    planned.tapeId = sharded.tapeId;
    PlannedAudit audit = plannedAuditOf(store, planned, shards);
    // Signed, so that no one who can write the case moves it to match their shards.
    const AuditorKey key = AuditorKey::loadOrCreate();
    Database& db = store.database();
    BusyTimeout wait(db, ReplayStore::kLongWriteWaitMs);
    SqlTransaction transaction(db);
    storePlannedAudit(db, audit, &key);
    transaction.commit();
    return audit;
}

std::vector<std::uint64_t> ShardedReplay::shardSelected(unsigned index) const
{
    return shardSelection(shards.shardPlan(plan, index), unplannable, index);
}

ReplaySummary runReplay(CaseStore& store, const ReplayRequest& asked)
{
    const auto started = Clock::now();
    // The seed is fixed before anything else: drawn now, when the request names none.
    ReplayRequest request = asked;
    if (!request.seed) {
        try {
            request.seed = drawAuditSeed();
        } catch (const Error& error) {
            throw ReplayError(error.what());
        }
        request.seedSource = SeedSource::Drawn;
    }
    ReplayStore replayStore(store.database());

    const CaseTape tape = chooseTape(store, request.tapeId);
    // A tape file that moved is found again, not replayed into a run of unverifiable
    // transactions that would stay in the case.
    if (const std::string problem = tapeFileProblem(tape); !problem.empty())
        throw ReplayError("not replayed: " + problem + " (the workstation's File > Locate Moved Tape, Ctrl+L, checks its chain head), or "
                          "move it back; nothing was stored");
    const RootRecord root = parseRoot(tape);
    const std::string workerPath = replayWorkerPath(request);
    worker::WorkerLog log;
    PlannedReplay planned = planSelection(replayStore, tape.id, request);
    if (request.shard) {
        if (asked.seed == std::nullopt)
            throw ReplayError("a shard of a replay needs its seed given (--seed S): every shard must draw the same selection");
        narrowToShard(planned, replayStore, tape.id, *request.shard);
    }
    const KernelProfile profile = kernelProfileFor(request.kernels, root.numerics, NumericEnvironment::hostCpu());
    std::vector<std::unique_ptr<worker::WorkerProcess>> prestarted = prestartWorkers(workerPath, request, root, planned.plan, profile);

    CheckedProgram program = checkSealedProgram(replayStore, root, request.programPath);
    std::string& problem = program.problem;
    bool embedded = false;
    if (problem.empty() && !planned.plan.segments.empty())
        problem = chooseRecordSource(tape, embedded);

    worker::WorkerHello hello;
    std::string device;
    try {
        hello = worker::awaitHello(*prestarted.front(), request.limits.startSeconds, log);
        device = checkReplayDevice(request.device, hello.cudaDevices, hello.libtorchVersion, hello.cudaVersion);
    } catch (const Error& error) {
        throw ReplayError(error.what());
    }
    const int intraOp = intraOpThreadsOf(request, root, hello.defaultIntraOpThreads);
    const unsigned workers = workerCount(request, planned.plan, intraOp);
    // The envelope follows the pair of environments: calibrated for it, or the tolerance's.
    const DeterminismProfile determinism = worker::workerDeterminism(root, hello, device, intraOp);
    const RegimeChoice regime = chooseRegime(root, ReplayEnvironment{runNumerics(hello, intraOp), determinism, hello.libtorchVersion});
    std::optional<EnvironmentPair> pair;
    if (root.numerics) {
        pair.emplace();
        pair->recorded = *root.numerics;
        pair->recordedTorch = root.torchVersion;
        pair->recordedDevice = root.device;
        pair->recordedDeterminism = root.determinism;
        pair->replay = runNumerics(hello, intraOp);
        pair->replayLibtorch = hello.libtorchVersion;
        pair->device = device;
        pair->replayDeterminism = determinism;
    }
    const EnvelopeChoice envelope = chooseEnvelope(request.calibration, pair, regime.regime == NumericRegime::CrossEnvironment,
                                                   request.tolerance.envelope, request.envelopeGiven);
    request.tolerance.envelope = envelope.envelope;
    // The calibration left out what a noise gradient reaches, found with the default
    // envelope: the run finds them the same way.
    if (envelope.calibrationUsed)
        request.noiseEnvelope = Tolerance::defaults().envelope;
    ReplayRunInfo info = runInfo(tape, root, request, hello, device, workers, intraOp, planned.selected.size(), profile);
    info.environmentJson = withEnvelope(info.environmentJson, envelope);
    info.programCheck = program.check;
    info.shard = request.shard;

    ReplaySummary summary;
    summary.tapeId = tape.id;
    summary.device = device;
    summary.selection = info.selection;
    summary.seed = *request.seed;
    summary.seedSource = request.seedSource;
    summary.transactionCount = planned.input.transactionCount;
    summary.selected = planned.selected;
    summary.problem = problem;
    summary.regime = std::string(regimeName(regime.regime));
    summary.regimeReason = regime.reason;
    summary.kernelProfile = profile;
    summary.determinism = determinism;
    summary.environmentPair = pair;
    summary.envelope = envelope;
    summary.runId = replayStore.beginRun(info);
    log.setPath(request.workerLogPath.empty() ? store.path() + ".replay-" + std::to_string(summary.runId) + ".log" : request.workerLogPath);

    OutcomeRecorder record(replayStore, request, summary, planned.plan.replayedTransactions() + planned.unplannable.size());
    const std::uint64_t interval = planned.input.snapshotInterval;
    std::vector<TransactionOutcome> pending;
    for (std::uint64_t index : planned.unplannable)
        pending.push_back(unverifiableOutcome(index, interval, true, UnverifiableCause::TapeMalformed,
                                              "the tape holds no snapshot to start this transaction's segment from; " +
                                                  std::string(trainersFailureReason(UnverifiableCause::TapeMalformed))));
    if (!problem.empty()) {
        for (const ReplaySegment& segment : planned.plan.segments)
            for (std::uint64_t index : segment.selected)
                pending.push_back(unverifiableOutcome(index, interval, true, UnverifiableCause::Environment, problem));
        record(pending);
        summary.sealProblem = replayStore.finishRun(summary.runId, RunStatus::Finished, problem);
        summary.status = RunStatus::Finished;
    } else {
        record(pending);
        worker::WorkerJob job = workerJob(store, replayStore, tape, root, planned, std::move(program.bytes), embedded, device, intraOp, request);
        worker::WorkerPoolSetup setup;
        setup.workers = workers;
        setup.snapshotInterval = interval;
        setup.memoryLimitBytes = job.memoryLimitBytes;
        setup.limits = request.limits;
        const worker::RecordPlan& records = job.records;
        setup.snapshotBytes = [&records](const ReplaySegment& segment, std::uint64_t t) { return worker::segmentSnapshotBytes(records, segment, t); };
        setup.log = &log;
        setup.executable = workerPath;
        setup.profile = profile;
        bool cancelled = false;
        try {
            setup.job = worker::encodeJob(job);
        } catch (const std::exception& error) {
            replayStore.finishRun(summary.runId, RunStatus::Failed, std::string("the replay stopped: ") + error.what());
            throw;
        }
        cancelled = !replaySegments(replayStore, summary.runId, planned, std::move(setup), std::move(prestarted), record, request);
        summary.status = cancelled ? RunStatus::Stopped : RunStatus::Finished;
        summary.sealProblem = replayStore.finishRun(summary.runId, summary.status, "");
    }
    summary.workerLog = log.writtenPath();
    summary.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return summary;
}

}  // namespace zkdv
