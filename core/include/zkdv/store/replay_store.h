#pragma once
// The replay side of a case: what a replay reads (selection inputs, record locations, the
// sealed program) and the runs, verdicts and metrics it stores. Audit-side: no torch.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/audit/program_check.h"
#include "zkdv/audit/run_status.h"
#include "zkdv/audit/audit_seed.h"
#include "zkdv/audit/replay_outcome.h"
#include "zkdv/audit/selection.h"
#include "zkdv/audit/shard_plan.h"
#include "zkdv/store/database.h"
#include "zkdv/tape/record_reader.h"

namespace zkdv {

class Database;
struct RunOwner;

// The problem recorded for a run whose process ended before it finished.
std::string interruptedRunProblem(const RunOwner& owner);

struct ReplayRunInfo {
    std::int64_t tapeId = 0;
    std::string device;
    std::string libtorchVersion;
    std::string selection;
    std::uint64_t seed = 0;
    SeedSource seedSource = SeedSource::Given;
    std::string tolerance;
    unsigned threads = 0;
    int intraOpThreads = 0;
    std::uint64_t selectedCount = 0;
    ProgramCheck programCheck = ProgramCheck::Matched;  // what the replay found before it ran anything
    std::string environmentJson = "{}";  // OS, CUDA, deterministic algorithms, program digest
    std::optional<ShardSpec> shard;      // a shard of a sharded replay (docs/replay.md, "Sharded replays")
};

struct StoredReplayRun {
    std::int64_t id = 0;
    std::int64_t tapeId = 0;
    std::string device;
    std::string libtorchVersion;
    std::string zkdvVersion;
    std::string selection;
    std::uint64_t seed = 0;
    SeedSource seedSource = SeedSource::Unknown;  // Unknown: stored before case schema 9
    std::string tolerance;
    int threads = 0;
    int intraOpThreads = 0;
    std::string startedAt;
    std::string finishedAt;
    RunStatus status = RunStatus::Running;
    // nullopt only for a run whose row a hand edit emptied: case schema 13 backfilled older runs.
    std::optional<ProgramCheck> programCheck;
    std::string problem;
    std::string environmentJson;
    // A shard's run (index and count), or a merged run of `shardCount` shards (no index);
    // 0 shards: an ordinary run.
    std::optional<unsigned> shardIndex;
    unsigned shardCount = 0;
    bool merged() const { return shardCount > 0 && !shardIndex; }
    std::uint64_t selectedCount = 0;
    std::uint64_t replayed = 0;
    std::uint64_t exact = 0, withinTolerance = 0, diverged = 0, unverifiable = 0;
    // Of the unverifiable, those the trainer's program or tape made unreplayable (blamesTrainer).
    std::uint64_t trainersFailures = 0;
};

struct StoredVerdict {
    std::uint64_t index = 0;
    std::uint64_t segment = 0;
    bool selected = true;
    Verdict verdict = Verdict::Unverifiable;
    UnverifiableCause cause = UnverifiableCause::None;
    std::string detail;
    std::string worstTensor;
    std::string worstSlot;
    double worstMaxUlp = 0;
    double worstRelativeL2 = 0;
    std::uint64_t replayNs = 0;
};

class ReplayStore {
public:
    explicit ReplayStore(Database& db) : db_(db) {}

    // Fingerprints are read only when `withUpdateNorms` (top-q needs them).
    SelectionInput selectionInput(std::int64_t tapeId, bool withUpdateNorms);
    std::vector<std::uint64_t> snapshotTransactions(std::int64_t tapeId);
    // Per transaction index, its recorded wall time in nanoseconds (0 where none is recorded).
    std::vector<std::uint64_t> transactionWallTimes(std::int64_t tapeId);
    std::optional<RecordRef> transactionRecord(std::int64_t tapeId, std::uint64_t index);
    std::optional<RecordRef> snapshotRecord(std::int64_t tapeId, std::uint64_t beforeTransaction);
    // The program's bytes when the case holds them (embedded in a tape or added as a file).
    std::optional<std::vector<std::uint8_t>> programBytes(const std::string& sha256Hex);
    // An embedded record payload (ingest --embed), if any.
    std::optional<std::vector<std::uint8_t>> embeddedPayload(std::int64_t tapeId, std::uint64_t recordIndex);

    // Another process may be writing the case (an ingest holds the write lock for its whole
    // tape): the writes below wait for it, boundedly, and never drop a result.
    // A new run in state "running", committed at once so a crash leaves a trace; waits up to
    // kLongWriteWaitMs for the write lock.
    std::int64_t beginRun(const ReplayRunInfo& info);
    // Stores verdicts and every comparison's metrics in one transaction. When the case stays
    // locked for kBatchWriteWaitMs they are kept in memory and stored with the next call or
    // by finishRun(); other failures throw.
    void storeOutcomes(std::int64_t runId, const std::vector<TransactionOutcome>& outcomes);
    // Stores whatever storeOutcomes() kept, and the run's end, in one transaction, and seals
    // the run with this user's signing key (zkdv/store/run_seal.h); waits up to
    // kLongWriteWaitMs for the write lock, then throws DatabaseError (busy()). Returns why
    // the run could not be sealed ("" when it was): it is stored unsigned then.
    std::string finishRun(std::int64_t runId, RunStatus status, const std::string& problem);
    // Outcomes storeOutcomes() accepted that are not in the case yet.
    std::size_t pendingOutcomes() const { return pending_.size(); }

    static constexpr int kBatchWriteWaitMs = 200;
    static constexpr int kLongWriteWaitMs = kWriterWaitMs;

    // Marks `interrupted` every run still `running` whose process is gone (RunOwner::isGone);
    // CaseStore does it when it opens a case for writing.
    void markInterruptedRuns();

    // Runs of one tape (0: every tape), newest first, with counts by verdict. A `running` run
    // whose process is gone reads as `interrupted`, even on a read-only connection.
    std::vector<StoredReplayRun> runs(std::int64_t tapeId = 0);
    std::vector<StoredVerdict> verdicts(std::int64_t runId);
    std::vector<TensorComparison> comparisons(std::int64_t runId, std::uint64_t index);
    // Every comparison of a run, by transaction index then tensor and slot. Metrics stored
    // as NULL (SQLite's NaN) read back as NaN.
    void forEachComparison(std::int64_t runId, const std::function<void(std::uint64_t index, TensorComparison&&)>& visit);

private:
    void writePending();

    Database& db_;
    std::int64_t pendingRun_ = 0;
    std::vector<TransactionOutcome> pending_;
};

}  // namespace zkdv
