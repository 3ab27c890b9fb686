#pragma once
// The auditor's core operation: replay chosen transactions of an ingested tape from their
// nearest snapshots, compare everything, and store the verdicts and metrics in the case.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/audit/audit_seed.h"
#include "zkdv/audit/envelope_calibration.h"
#include "zkdv/audit/pass_rule.h"
#include "zkdv/audit/replay_outcome.h"
#include "zkdv/audit/selection.h"
#include "zkdv/audit/shard_plan.h"
#include "zkdv/tape/determinism_profile.h"
#include "zkdv/audit/tolerance.h"
#include "zkdv/replay/kernel_profile.h"
#include "zkdv/replay/replay_limits.h"
#include "zkdv/util/error.h"
#include "zkdv/util/progress.h"

namespace zkdv {

class CaseStore;

// A request that cannot start: no such tape, bad selection, device not present. Nothing
// was stored.
class ReplayError : public Error {
public:
    using Error::Error;
};

struct ReplayRequest {
    std::int64_t tapeId = 0;  // 0: the case's only tape (ReplayError when it holds several)
    SelectionSpec selection;
    // The seed of random and stratified selections. Unset: drawn from the operating system
    // as the run starts (drawAuditSeed), so nobody knows it before the audit; the run stores
    // it as drawn. Set: stored with `seedSource` (Given unless a frontend drew it itself, as
    // the workstation's dialog does when it proposes one).
    std::optional<std::uint64_t> seed;
    SeedSource seedSource = SeedSource::Given;
    // Replays only this shard of the selection (planShardedReplay; the seed must be given)
    // and marks the run with it, so that `zkdv-audit merge` can join the shards' runs.
    std::optional<ShardSpec> shard;
    std::string device = "cpu";
    unsigned threads = 0;     // worker processes replaying segments at once on CPU; 0 and at most: one per core
    int intraOpThreads = 0;   // libtorch threads per replay worker; 0: libtorch's default
    Tolerance tolerance = Tolerance::defaults();
    // The auditor chose the tolerance's envelope (--tolerance envelope=X or exact): the run
    // says so instead of "default".
    bool envelopeGiven = false;
    // Cross-environment: derive the envelope from this calibration when it was measured for
    // the run's pair of environments (docs/replay.md, "Calibration"); otherwise the run keeps
    // the tolerance's envelope and says why.
    std::optional<LoadedCalibration> calibration;
    // Set by the run: the envelope that decides which gradients are rounding noise, when not
    // the tolerance's (0).
    double noiseEnvelope = 0;
    // Which kernel settings the workers run (kernel_profile.h): the training's by default.
    KernelChoice kernels = KernelChoice::Recorded;
    std::string programPath;  // a sealed program file to use when the case holds none
    // Each worker process's time and memory (docs/replay.md, "Containment").
    ReplayLimits limits;
    // What the workers print goes here; "": CASE.replay-RUN.log beside the case.
    std::string workerLogPath;
    std::string workerPath;  // the zkdv-replay-worker to run; "": found beside the executable
    ProgressSink* progress = nullptr;  // transactions replayed of those planned; may cancel
    // Called on the caller's thread as each transaction's outcome is stored.
    std::function<void(const TransactionOutcome&)> onOutcome;
};

struct ReplaySummary {
    std::int64_t runId = 0;
    std::int64_t tapeId = 0;
    RunStatus status = RunStatus::Finished;
    std::string device;
    std::string selection;  // canonical spec
    std::uint64_t seed = 0;
    SeedSource seedSource = SeedSource::Given;
    std::uint64_t transactionCount = 0;  // in the tape
    std::vector<std::uint64_t> selected;
    std::uint64_t replayed = 0;          // selected + prefixes
    std::uint64_t exact = 0, withinTolerance = 0, diverged = 0, unverifiable = 0;  // over replayed
    std::uint64_t trainersFailures = 0;  // of the unverifiable, those the tape's program or tape is to blame for
    std::string problem;                 // run-wide reason for unverifiable (program mismatch…)
    // "same-environment" or "cross-environment" (docs/replay.md, "Regimes") and, for the
    // latter, why: the tape's numerical environment against the workers'.
    std::string regime;
    std::string regimeReason;
    KernelProfile kernelProfile;  // what the workers ran under
    DeterminismProfile determinism;  // the determinism profile the workers ran with (docs/replay.md)
    // The tape's environment and the workers' (unset when the tape records none), and the
    // envelope the run judged by, with where it came from.
    std::optional<EnvironmentPair> environmentPair;
    EnvelopeChoice envelope;
    double seconds = 0;
    std::vector<TransactionOutcome> firstFailures;  // the kFirstFailureCount lowest-indexed diverged/unverifiable, in index order
    std::string workerLog;               // the log of the workers' output, "" when they printed nothing
    std::string sealProblem;             // why the run was stored unsigned ("" when sealed): no report can vouch for it

    // Confirmed the tape (exit status 0): bit for bit, or within rounding.
    bool passed() const { return replayRunPassed(status, diverged, unverifiable); }
    bool bitForBit() const { return replayRunBitForBit(status, diverged, unverifiable, withinTolerance); }
    bool failed() const { return replayRunFailed(diverged, trainersFailures); }
};

// Runs the request against the case (opened read-write), the program only inside worker
// processes. Throws ReplayError before anything is stored when the request is unusable
// (also when the worker is not installed); OperationCancelled is not thrown: a
// stopped run is stored as RunStatus::Stopped with the outcomes it reached.
ReplaySummary runReplay(CaseStore& store, const ReplayRequest& request);

// The selection of `request` (its tape and seed; ReplayError without a seed, which every
// machine must share) split into `shards` shards of whole segments (shard_plan.h): what
// `zkdv-audit plan` prints, what each shard of a sharded replay replays and what
// `zkdv-audit merge` checks the shards' results against.
struct ShardedReplay {
    std::int64_t tapeId = 0;
    std::vector<std::uint64_t> selected;
    // Selected, but no snapshot starts their segment: shard 0 reports them unverifiable.
    std::vector<std::uint64_t> unplannable;
    ReplayPlan plan;
    ShardPlan shards;

    // The selected transactions shard `index` reports, ascending.
    std::vector<std::uint64_t> shardSelected(unsigned index) const;
};
ShardedReplay planShardedReplay(CaseStore& store, const ReplayRequest& request, unsigned shards);

}  // namespace zkdv
