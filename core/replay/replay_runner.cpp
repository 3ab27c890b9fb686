#include "zkdv/replay/replay_runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>
#include <sys/utsname.h>

#include "segment_executor.h"
#include "zkdv/replay/replay_devices.h"
#include "zkdv/replay/replay_plan.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/tape/record_frame.h"
#include "zkdv/tape/record_reader.h"
#include "zkdv/tensor/torch_build.h"
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

// Record locations for every record the plan reads, fetched up front so workers never
// touch the case's connection.
struct RecordIndex {
    std::map<std::uint64_t, RecordRef> transactions;
    std::map<std::uint64_t, RecordRef> snapshots;
};

RecordIndex indexRecords(ReplayStore& store, std::int64_t tapeId, const ReplayPlan& plan)
{
    RecordIndex index;
    for (const ReplaySegment& segment : plan.segments) {
        for (std::uint64_t k : {segment.snapshot, segment.lastTransaction + 1})
            if (auto ref = store.snapshotRecord(tapeId, k))
                index.snapshots.emplace(k, *ref);
        // The transaction before a snapshot links it into the chain (embedded payloads).
        for (std::uint64_t t = segment.snapshot == 0 ? 0 : segment.snapshot - 1; t <= segment.lastTransaction; ++t)
            if (auto ref = store.transactionRecord(tapeId, t))
                index.transactions.emplace(t, *ref);
    }
    return index;
}

class TapeRecordSource : public RecordSource {
public:
    TapeRecordSource(const RecordReader& reader, const RecordIndex& index) : reader_(reader), index_(index) {}

    ByteSpan snapshot(std::uint64_t k) override
    {
        auto it = index_.snapshots.find(k);
        if (it == index_.snapshots.end())
            throw FormatError("the case holds no snapshot before transaction " + std::to_string(k), 0);
        return reader_.payload(it->second, tape::RecordType::Snapshot);
    }

    ByteSpan transaction(std::uint64_t t) override
    {
        auto it = index_.transactions.find(t);
        if (it == index_.transactions.end())
            throw FormatError("the case holds no transaction " + std::to_string(t), 0);
        return reader_.payload(it->second, tape::RecordType::Transaction);
    }

private:
    const RecordReader& reader_;
    const RecordIndex& index_;
};

// Payloads copied into the case (ingest --embed), for when the tape file is gone. The case
// keeps each record's digest, so a payload is checked by rebuilding its frame on the
// digest of the record before it.
class EmbeddedRecordSource : public RecordSource {
public:
    EmbeddedRecordSource(const std::string& casePath, std::int64_t tapeId, std::uint64_t interval, const RecordIndex& index,
                         const Digest& beforeFirstSnapshot)
        : db_(casePath, Database::Mode::ReadOnly), store_(db_), tapeId_(tapeId), interval_(interval), index_(index),
          beforeFirstSnapshot_(beforeFirstSnapshot)
    {
    }

    ByteSpan snapshot(std::uint64_t k) override
    {
        const RecordRef& ref = find(index_.snapshots, k, "snapshot before transaction");
        const Digest previous = k == 0 ? beforeFirstSnapshot_ : find(index_.transactions, k - 1, "transaction").digest;
        return load(ref, tape::RecordType::Snapshot, previous, snapshot_);
    }

    ByteSpan transaction(std::uint64_t t) override
    {
        const RecordRef& ref = find(index_.transactions, t, "transaction");
        const Digest previous = t % interval_ == 0 ? find(index_.snapshots, t, "snapshot before transaction").digest
                                                   : find(index_.transactions, t - 1, "transaction").digest;
        return load(ref, tape::RecordType::Transaction, previous, transaction_);
    }

private:
    static const RecordRef& find(const std::map<std::uint64_t, RecordRef>& refs, std::uint64_t key, const char* what)
    {
        auto it = refs.find(key);
        if (it == refs.end())
            throw FormatError(std::string("the case holds no ") + what + " " + std::to_string(key), 0);
        return it->second;
    }

    ByteSpan load(const RecordRef& ref, tape::RecordType type, const Digest& previous, std::vector<std::uint8_t>& storage)
    {
        std::optional<std::vector<std::uint8_t>> payload = store_.embeddedPayload(tapeId_, ref.index);
        if (!payload)
            throw FormatError("record " + std::to_string(ref.index) + " is not embedded in the case", 0);
        storage = std::move(*payload);
        const FrameHeader header = frameHeader(static_cast<std::uint32_t>(type), tape::kFlagCritical, storage.size(), previous);
        if (frameDigest(header, {ByteSpan(storage)}, hasher_) != ref.digest)
            throw FormatError("record " + std::to_string(ref.index) + "'s embedded payload does not hash to the digest ingested with it", 0);
        return ByteSpan(storage);
    }

    Database db_;
    ReplayStore store_;
    std::int64_t tapeId_;
    std::uint64_t interval_;
    const RecordIndex& index_;
    Digest beforeFirstSnapshot_;
    Sha256 hasher_;
    std::vector<std::uint8_t> snapshot_, transaction_;
};

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

// Outcomes travel from the workers to the caller's thread, which stores them.
class OutcomeQueue {
public:
    void push(TransactionOutcome&& outcome)
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            outcomes_.push_back(std::move(outcome));
        }
        ready_.notify_one();
    }
    void workerDone()
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            ++finishedWorkers_;
        }
        ready_.notify_one();
    }
    // Waits up to `wait` for outcomes; returns what arrived.
    std::vector<TransactionOutcome> take(std::chrono::milliseconds wait, unsigned workers, bool& allDone)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait_for(lock, wait, [&] { return !outcomes_.empty() || finishedWorkers_ == workers; });
        std::vector<TransactionOutcome> taken(std::make_move_iterator(outcomes_.begin()), std::make_move_iterator(outcomes_.end()));
        outcomes_.clear();
        allDone = finishedWorkers_ == workers;
        return taken;
    }

private:
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<TransactionOutcome> outcomes_;
    unsigned finishedWorkers_ = 0;
};

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

    std::string device;
    try {
        device = checkReplayDevice(request.device);
    } catch (const Error& error) {
        throw ReplayError(error.what());
    }

    // What to replay, and in which segments.
    const bool cpu = device == "cpu";
    SelectionInput input = replayStore.selectionInput(tape->id, request.selection.kind == SelectionSpec::Kind::TopQ);
    std::vector<std::uint64_t> selected;
    try {
        selected = selectTransactions(request.selection, request.seed, input);
    } catch (const SelectionError& error) {
        throw ReplayError(error.what());
    }
    std::vector<std::uint64_t> unplannable;
    const ReplayPlan plan = planReplay(selected, input.snapshotInterval, replayStore.snapshotTransactions(tape->id), &unplannable);

    // The program, checked before anything runs.
    std::string problem;
    std::vector<std::uint8_t> program;
    if (root.programKind != "torchscript") {
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

    // The trainer's thread count reproduces its CPU reductions bit for bit.
    const int intraOp = request.intraOpThreads > 0                  ? request.intraOpThreads
                        : cpu && root.intraOpThreads > 0           ? root.intraOpThreads
                                                                     : defaultIntraOpThreads();
    unsigned workers = 1;
    if (cpu) {
        const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        workers = request.threads > 0 ? request.threads : std::max(1u, cores / static_cast<unsigned>(std::max(1, intraOp)));
    }
    workers = static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(workers, plan.segments.size())));

    ReplayRunInfo info;
    info.tapeId = tape->id;
    info.device = device;
    info.libtorchVersion = libtorchVersion();
    info.selection = request.selection.toString();
    info.seed = request.seed;
    info.tolerance = request.tolerance.toString();
    info.threads = workers;
    info.intraOpThreads = intraOp;
    info.selectedCount = selected.size();
    info.environmentJson = toJsonText(nlohmann::json{{"os", operatingSystem()},
                                                     {"libtorch", libtorchVersion()},
                                                     {"cuda", cudaVersion()},
                                                     {"cuda_devices", cudaDeviceCount()},
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
        replayStore.finishRun(summary.runId, "finished", problem);
        summary.status = "finished";
    } else {
        record(pending);
        prepareDeterministicReplay();
        ExecutorSetup setup;
        setup.root = root;
        setup.program = std::move(program);
        setup.device = device;
        setup.intraOpThreads = intraOp;
        setup.tolerance = request.tolerance;
        const RecordIndex records = indexRecords(replayStore, tape->id, plan);
        const Digest beforeFirstSnapshot = digestBeforeFirstSnapshot(*tape, root, setup.program);

        std::atomic<bool> cancel{false};
        std::atomic<bool> workerFailed{false};
        std::atomic<std::size_t> nextSegment{0};
        OutcomeQueue queue;
        std::vector<std::thread> threads;
        if (plan.segments.empty())
            workers = 0;
        for (unsigned w = 0; w < workers; ++w) {
            threads.emplace_back([&] {
              try {
                std::unique_ptr<SegmentExecutor> executor;
                std::string failure;
                try {
                    executor = SegmentExecutor::create(setup);
                } catch (const std::exception& error) {
                    failure = error.what();
                }
                std::unique_ptr<RecordSource> source;
                if (embedded)
                    source = std::make_unique<EmbeddedRecordSource>(store.path(), tape->id, input.snapshotInterval, records, beforeFirstSnapshot);
                else
                    source = std::make_unique<TapeRecordSource>(*reader, records);
                for (std::size_t s = nextSegment++; s < plan.segments.size() && !cancel; s = nextSegment++) {
                    const ReplaySegment& segment = plan.segments[s];
                    if (!executor) {
                        for (std::uint64_t t = segment.snapshot; t <= segment.lastTransaction; ++t)
                            queue.push(unverifiableOutcome(t, input.snapshotInterval,
                                                           std::binary_search(segment.selected.begin(), segment.selected.end(), t), failure));
                        continue;
                    }
                    executor->replay(segment, *source, [&](TransactionOutcome&& outcome) { queue.push(std::move(outcome)); },
                                     [&] { return cancel.load(); });
                }
              } catch (...) {
                  // Outcomes not emitted stay missing from the run; it is marked failed below.
                  workerFailed = true;
              }
              queue.workerDone();
            });
        }
        bool allDone = false;
        while (!allDone) {
            std::vector<TransactionOutcome> arrived = queue.take(std::chrono::milliseconds(100), workers, allDone);
            std::sort(arrived.begin(), arrived.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
            try {
                record(arrived);
            } catch (...) {
                cancel = true;
                for (std::thread& thread : threads)
                    thread.join();
                replayStore.finishRun(summary.runId, "failed", "storing results failed");
                throw;
            }
            if (request.progress && request.progress->cancelRequested())
                cancel = true;
        }
        for (std::thread& thread : threads)
            thread.join();
        summary.status = workerFailed ? "failed" : cancel ? "cancelled" : "finished";
        replayStore.finishRun(summary.runId, summary.status, workerFailed ? "a replay worker stopped unexpectedly" : "");
    }
    summary.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return summary;
}

}  // namespace zkdv
