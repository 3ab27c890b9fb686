#pragma once
// The audit report as data: everything a report says, built once from the case, so every
// renderer (JSON, CSV here; PDF and HTML in the Qt report library) says the same thing.
// Audit-side: no torch, no Qt.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/audit/audit_outcome.h"
#include "zkdv/audit/audit_seed.h"
#include "zkdv/audit/divergence.h"
#include "zkdv/audit/program_check.h"
#include "zkdv/audit/run_status.h"
#include "zkdv/audit/shard_plan.h"
#include "zkdv/audit/verdict.h"
#include "zkdv/store/case_contents.h"
#include "zkdv/store/merged_shards.h"
#include "zkdv/store/run_seal.h"
#include "zkdv/store/tape_link.h"
#include "zkdv/store/transaction_notes.h"
#include "zkdv/util/error.h"
#include "zkdv/util/trainer_keyring.h"

namespace zkdv {

class CaseStore;
struct TapeSummary;

class ReportError : public Error {
public:
    using Error::Error;
};

// Upper confidence bounds on the fraction of bad transactions from a uniform random sample
// (docs/report.md): with n of N transactions replayed and k failures.
struct SamplingStatement {
    std::uint64_t population = 0;  // N
    std::uint64_t sampled = 0;     // n
    std::uint64_t failures = 0;    // k
    double upper95 = 1.0;          // one-sided 95 % upper bound on the bad fraction
    double upper99 = 1.0;
    std::string method;            // "hypergeometric (exact, finite population)"
    std::string sentence;          // the statement in words
    // Added for the report's tables and the JSON (docs/report-schema.md):
    std::uint64_t badUpper95 = 0;  // B at 95 %: upper95 == badUpper95 / population
    std::uint64_t badUpper99 = 0;
    double clopperPearson95 = 1.0; // the binomial (infinite-population) bound, for comparison
    double clopperPearson99 = 1.0;
};

// Exact one-sided upper bounds: the largest bad count B (of N) such that drawing n without
// replacement gives at most k bad with probability >= 1 - confidence, divided by N
// (hypergeometric); and the Clopper-Pearson bound for the infinite-population case.
double hypergeometricUpperBound(std::uint64_t population, std::uint64_t sampled, std::uint64_t failures, double confidence);
double clopperPearsonUpperBound(std::uint64_t sampled, std::uint64_t failures, double confidence);
// The B of hypergeometricUpperBound (a count of transactions), and P[X <= k] for X the bad
// transactions among n drawn without replacement from N of which B are bad.
std::uint64_t hypergeometricUpperCount(std::uint64_t population, std::uint64_t sampled, std::uint64_t failures, double confidence);
double hypergeometricCdf(std::uint64_t population, std::uint64_t bad, std::uint64_t sampled, std::uint64_t failures);

struct ReportComparison {
    std::uint64_t transaction = 0;  // the transaction this comparison belongs to
    std::string tensor;
    std::string slot;
    Verdict verdict = Verdict::Unverifiable;
    DivergenceMetrics metrics;
    std::string note;
};

// One replayed transaction as the case stores it (RunTransaction), with its comparisons.
struct ReportTransaction : RunTransaction {
    std::vector<ReportComparison> comparisons;  // every comparison made (CSV: one row each)
};

// Another replay run of the same tape, as the report lists it: a report is about one run, but
// it never keeps quiet about what the tape's other runs found.
struct ReportOtherRun {
    std::int64_t id = 0;
    RunStatus status = RunStatus::Finished;
    std::string selection;
    std::uint64_t seed = 0;
    SeedSource seedSource = SeedSource::Unknown;
    std::string device;
    std::string startedAt;
    std::uint64_t replayed = 0;
    std::uint64_t exact = 0, withinTolerance = 0, diverged = 0, unverifiable = 0;
    std::uint64_t trainersFailures = 0;      // of the unverifiable, the tape's own program's or tape's doing
    bool vouched = false;                    // its rows carry a seal this reader trusts
    RunSealCheck::State sealState = RunSealCheck::State::Unsigned;
    // What it found when sealed, under a trusted signature that still holds (also when its
    // rows were altered since).
    std::optional<RunFinding> finding;
    std::vector<std::uint64_t> divergedTransactions;  // the first few, when vouched
};

// An earlier run the report's run recorded, when it was sealed, as having found the tape at
// fault, and which no longer says so in the case (deleted, unsigned or altered since).
struct ReportVanishedFailure {
    std::int64_t runId = 0;
    std::string now;  // "no longer in the case", "altered", "unsigned"
};

struct ReportData {
    // Where and when.
    std::string casePath;
    std::string generatedAt;   // UTC, ISO 8601
    std::string zkdvVersion;

    // The tape.
    std::int64_t tapeId = 0;
    std::string tapePath;
    std::string chainHead;   // the tape's identity: commits to every byte of a sealed tape
    std::uint64_t tapeSize = 0;  // bytes; with the chain head, the tape's identity in a case
    std::string fileSha256;  // empty unless computed at ingest
    std::string tapeStatus;    // sealed, unsealed, truncated (a corrupt tape is never in a case)
    std::uint64_t transactionCount = 0;
    std::uint64_t snapshotCount = 0;
    std::uint64_t recordCount = 0;  // intact records (a truncated tape is cut at record index recordCount)
    std::string tapeFormat;         // "1.5"
    // Set when the case holds no snapshot of the state after the last transaction (a tape
    // before format 1.5 whose count is off the interval, tape format 6.2): the first
    // transaction of the segment that ends at no snapshot.
    std::optional<std::uint64_t> endsWithoutSnapshotFrom;
    std::string producer;
    std::string trainedOn;     // device, torch version, intra-op threads
    // Who signed the tape (format 1.11, verified at ingest; empty: unsigned), and whether the
    // trainer keyring of whoever builds the report trusts that key, or, for an unsigned tape,
    // expects a signature (it holds keys).
    std::string signerKeyId;
    std::string signerAlgorithm;
    SignatureTrust signatureTrust = SignatureTrust::Unsigned;
    std::string trustedKeyFile;
    std::string signatureProblem;  // why the keyring could not be read, when it could not
    bool signerRequired = false;   // ReportOptions::requireTrustedSigner
    // A run resumed from checkpoints spans tapes (tape format 1.10): the run's transactions on
    // the tapes before this one, whether this tape continues the one its root names
    // (tapeLinkStatusName, and TapeLink::describe()), and the run's tapes, first to last.
    std::uint64_t runTransactionsBefore = 0;
    TapeLinkStatus runLink = TapeLinkStatus::StartsRun;
    std::string runLinkText;
    std::int64_t runLinkPreviousTape = 0;  // Continues, Broken: the case's tape the root names
    std::string runLinkProblem;            // Broken: why the link fails
    std::vector<std::int64_t> runTapes;
    // Other sealed tapes of the case that continue the same tape as this one (a fork: the run
    // was trained twice from one state), by case id.
    std::vector<std::int64_t> forkedWith;
    // Whether the tape carries as many sampled checks as its probabilities make likely: a
    // tape with implausibly few (a sign of ground draws) fails (docs/report.md).
    std::optional<SamplingPlausibility> tapeSampling;

    // The program.
    std::string programKind;
    std::string programSha256;
    bool programPresent = false;
    // What the run found when it checked the program, as stored with it; nullopt when no run
    // checked it (a finding report) or the case lost it. The detail says why it did not match.
    std::optional<ProgramCheck> programCheck;
    std::string programCheckDetail;

    // Model and optimizer.
    std::uint64_t parameterCount = 0;   // tensors
    std::uint64_t parameterElements = 0;
    std::uint64_t bufferCount = 0;
    std::vector<std::string> layout;    // "conv1.weight F32 [8, 1, 3, 3]"
    std::string optimizerContract;
    std::vector<std::string> optimizerGroups;  // options JSON per group
    // The root's optimizer.schedule (tape format 1.6): the scheduled options, and the kind of
    // the scheduler the replay checks them against ("" when they are as recorded).
    std::vector<std::string> scheduledOptions;  // empty: every option static
    std::string schedulerKind;
    std::string scheduleStatement;  // zkdv/tape/schedule_statement.h

    // The replay run the report is about.
    std::int64_t runId = 0;
    std::optional<RunStatus> runStatus;  // nullopt: no replay run (a finding report)
    std::string device;
    std::string libtorchVersion;
    std::string cudaVersion;
    std::string operatingSystem;
    // "same-environment" or "cross-environment" (docs/replay.md, "Regimes"), "" when the run
    // predates the regimes; the reason says which parts of the numerical environment differ.
    std::string numericRegime;
    std::string numericRegimeReason;
    // The workers' kernel settings (docs/replay.md, "Kernel profile"): "recorded" or "host",
    // and "recorded (ATEN_CPU_CAPABILITY=avx2, …)" with what they were; "" before profiles.
    std::string kernelChoice;
    std::string kernelProfile;
    // The determinism profile the workers ran with, in words (DeterminismProfile::summary),
    // and the one the tape records; "" when not recorded (runs and tapes before format 1.13).
    std::string replayDeterminism;
    std::string trainingDeterminism;
    // The envelope the cross-environment regime judged by (docs/replay.md, "Calibration"):
    // its value, "default", "tolerance" or "calibrated" ("" before calibrations), why, and
    // the calibration the replay was given.
    std::optional<double> envelope;
    std::string envelopeSource;
    std::string envelopeNote;
    struct Calibration {
        std::string path;
        std::string sha256;
        bool used = false;
        std::uint64_t samples = 0;
        double maxRatio = 0;
        double safetyFactor = 0;
        double quantileLevel = 0;
    };
    std::optional<Calibration> calibration;
    std::string replayZkdvVersion;  // the zkdv that ran the replay (zkdvVersion made the report)
    std::string selection;     // canonical spec
    std::uint64_t seed = 0;
    // Drawn at audit time, given by the auditor, or unknown (a run stored before case schema
    // 9): the sampling statement rests on a seed the trainer could not know, and says which.
    SeedSource seedSource = SeedSource::Unknown;
    std::string tolerance;
    std::string redoCommand;   // zkdv-audit replay … that redoes this audit
    std::uint64_t selectedCount = 0;
    std::uint64_t replayedCount = 0;
    std::uint64_t exact = 0, withinTolerance = 0, diverged = 0, unverifiable = 0;
    std::uint64_t trainersFailures = 0;  // of the unverifiable: the tape's own program or tape is to blame
    std::uint64_t comparisonCount = 0;  // tensors and values compared, over every replayed transaction
    std::string runProblem;
    // A shard's run: which shard of how many of the selection it replayed (it covers only
    // that part); a merged run: the shards it was merged from, with their hosts and devices
    // (docs/replay.md, "Sharded replays").
    std::optional<ShardSpec> shard;
    std::vector<MergedShard> mergedShards;
    // Whether the run's rows carry a seal this reader trusts: the conclusion is drawn only
    // from vouched rows (docs/report.md, "Vouched results").
    RunSealCheck seal;
    // The case's rows the report prints besides the run's own that no seal this reader trusts
    // covers as they stand, one sentence each: a tape whose ingested rows are unsealed, altered
    // or sealed by a key they do not trust (zkdv/store/tape_seal.h: the report reads every tape
    // of the case, for the resume link and forks), a note altered since its author signed it,
    // a stored program whose bytes are not its digest's. Any makes the report NOT VOUCHED
    // (docs/report.md, "Vouched results").
    std::vector<std::string> unvouchedRows;

    // The tape's other replay runs, newest first.
    std::vector<ReportOtherRun> otherRuns;
    std::vector<ReportVanishedFailure> vanishedFailures;

    // The conclusion.
    // The outcome (zkdv/audit/audit_outcome.h), the headline's first words. passed() is PASSED
    // alone (bit for bit); confirmsTape() also CONSISTENT WITHIN ROUNDING.
    AuditOutcome outcome = AuditOutcome::NotVerified;
    bool passed() const { return outcome == AuditOutcome::Passed; }
    bool confirmsTape() const { return outcomeConfirmsTape(outcome); }
    std::string headline;                 // one sentence a non-engineer understands
    std::vector<std::string> warnings;    // first-page warnings: tampering found, truncated or unsealed tape, program mismatch…
    std::optional<SamplingStatement> sampling;  // for random (not stratified/top-q/ids) selections
    std::string samplingNote;             // when there is no statement: why (selection kind, run not finished)
    std::vector<ReportComparison> worstDivergences;  // up to 20, worst first, with transaction indexes in `note`
    std::vector<ReportTransaction> transactions;     // replayed, ascending

    // Chart series for renderers: loss over every transaction (index, loss) and the replayed
    // transactions' worst divergence (index, max ULP, relative L2).
    std::vector<std::uint64_t> lossIndex;
    std::vector<double> loss;

    // The auditor's flags and notes on the tape's transactions, ascending (replayed or not).
    std::vector<TransactionNote> auditorNotes;
    // Who signed each of them, in their order: "ed25519:… (this user's key)" or "(trusted: …)",
    // "ed25519:… (not a key this reader trusts)", or "unsigned".
    std::vector<std::string> auditorNoteSigners;
};

struct ReportOptions {
    std::int64_t tapeId = 0;   // 0: the case's only tape
    std::int64_t runId = 0;    // 0: the newest run of that tape
    // The trainer keyring the tape's signer is judged with: these public keys (PEM) and the
    // trainer-keys folder (TrainerKeyring::load).
    std::vector<std::filesystem::path> trustedKeyFiles;
    // A tape no trusted key signed cannot pass: the report says so (zkdv-audit report
    // --require-trusted).
    bool requireTrustedSigner = false;
};

// Builds the report of one replay run from the case. Throws ReportError when the case has
// no such tape or run (a report needs a replay).
ReportData buildAuditReport(CaseStore& store, const ReportOptions& options = {});

// The report of a tape that could not be ingested (corrupt, or incomplete): what the scan
// found, where, and what it means; no run. Every renderer takes it like any report.
ReportData buildTapeFindingReport(const TapeSummary& summary);

// Machine renderers (stable keys: docs/report-schema.md).
std::string renderReportJson(const ReportData& report);
std::string renderReportCsv(const ReportData& report);

}  // namespace zkdv
