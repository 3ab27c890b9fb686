// Builds the audit report's data model from the case: the tape, its program, model and
// optimizer, one replay run with its verdicts and metrics, and the conclusion in words.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "report_conclusion.h"
#include "report_signer.h"
#include "zkdv/tape/schedule_statement.h"
#include "zkdv/audit/selection.h"
#include "zkdv/graph/exported_graph.h"
#include "zkdv/report/audit_report.h"

#include "zkdv/util/trainer_keyring.h"

#include "zkdv/store/tape_link.h"
#include "zkdv/store/case_contents.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/tape_seal.h"
#include "zkdv/store/transaction_notes.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/shape_text.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/sha256.h"
#include "zkdv/util/shell_word.h"
#include "zkdv/util/utc_time.h"
#include "zkdv/version.h"

namespace zkdv {

namespace {

constexpr std::size_t kWorstDivergences = 20;

// Worst first: verdict, then the largest ULP distance, then relative L2 (NaN ranks highest).
bool worseThan(const ReportComparison& a, const ReportComparison& b)
{
    // The enum is ordered best to worst.
    if (a.verdict != b.verdict)
        return a.verdict > b.verdict;
    auto key = [](double v) { return std::isnan(v) ? std::numeric_limits<double>::infinity() : v; };
    if (key(a.metrics.maxUlp) != key(b.metrics.maxUlp))
        return key(a.metrics.maxUlp) > key(b.metrics.maxUlp);
    if (key(a.metrics.relativeL2) != key(b.metrics.relativeL2))
        return key(a.metrics.relativeL2) > key(b.metrics.relativeL2);
    if (a.transaction != b.transaction)
        return a.transaction < b.transaction;
    return a.tensor + " " + a.slot < b.tensor + " " + b.slot;
}

CaseTape chooseTape(CaseStore& store, std::int64_t tapeId, const std::vector<StoredReplayRun>& allRuns, std::int64_t runId)
{
    if (tapeId != 0) {
        std::optional<CaseTape> tape = store.tape(tapeId);
        if (!tape)
            throw ReportError("the case " + store.path() + " has no tape " + std::to_string(tapeId));
        return *tape;
    }
    if (runId != 0)
        for (const StoredReplayRun& run : allRuns)
            if (run.id == runId) {
                std::optional<CaseTape> tape = store.tape(run.tapeId);
                if (tape)
                    return *tape;
            }
    std::vector<CaseTape> tapes = store.tapes();
    if (tapes.empty())
        throw ReportError("the case " + store.path() + " holds no tape; ingest one first: zkdv-audit ingest TAPE --case " + store.path());
    if (tapes.size() > 1) {
        std::string ids;
        for (const CaseTape& tape : tapes)
            ids += (ids.empty() ? "" : ", ") + std::to_string(tape.id);
        throw ReportError("the case " + store.path() + " holds " + std::to_string(tapes.size()) + " tapes (" + ids +
                          "); choose one with --tape ID");
    }
    return tapes.front();
}

// The shape as the case stores it (JSON), written as every output writes shapes; as stored
// when it is not a list of integers.
std::string shapeTextOfJson(const std::string& shapeJson)
{
    try {
        const nlohmann::json shape = parseUntrustedJson(shapeJson, "tensor shape");
        if (!shape.is_array())
            return shapeJson;
        std::vector<std::int64_t> dims;
        for (const nlohmann::json& d : shape) {
            if (!d.is_number_integer())
                return shapeJson;
            dims.push_back(d.get<std::int64_t>());
        }
        return shapeText(dims);
    } catch (const FormatError&) {
        return shapeJson;
    }
}

std::uint64_t elementsOf(const std::string& shapeJson)
{
    try {
        std::uint64_t product = 1;
        for (const nlohmann::json& d : parseUntrustedJson(shapeJson, "tensor shape"))
            product *= d.get<std::uint64_t>();
        return product;
    } catch (const FormatError&) {
        return 0;
    } catch (const nlohmann::json::exception&) {
        return 0;
    }
}

void readModel(Database& db, std::int64_t tapeId, ReportData& report)
{
    for (const StoredTensor& tensor : loadModelLayout(db, tapeId)) {
        const std::string line = tensor.name + " " + tensor.dtype + " " + shapeTextOfJson(tensor.shapeJson);
        if (!tensor.buffer) {
            ++report.parameterCount;
            report.parameterElements += elementsOf(tensor.shapeJson);
            report.layout.push_back(line);
        } else {
            ++report.bufferCount;
            report.layout.push_back(line + " (buffer)");
        }
    }
    report.optimizerGroups = loadOptimizerGroupOptions(db, tapeId);
}

void readTrainingSide(const CaseTape& tape, ReportData& report)
{
    try {
        const RootRecord root = RootRecord::parse(ByteSpan(std::string_view(tape.rootJson)));
        report.tapeFormat = std::to_string(root.formatMajor) + "." + std::to_string(root.formatMinor);
        report.trainedOn = root.device + ", torch " + root.torchVersion +
                           (root.intraOpThreads > 0 ? ", " + std::to_string(root.intraOpThreads) + " intra-op thread" +
                                                          (root.intraOpThreads == 1 ? "" : "s")
                                                    : std::string(", intra-op threads not recorded"));
        if (report.producer.empty())
            report.producer = root.producerName + " " + root.producerVersion;
        if (root.optimizerSchedule)
            report.scheduledOptions = root.optimizerSchedule->options;
        if (root.determinism)
            report.trainingDeterminism = root.determinism->summary();
        report.schedulerKind = schedulerKind(root);
        report.scheduleStatement = scheduleStatement(root);
    } catch (const FormatError& error) {
        report.trainedOn = std::string("unreadable: the case's ") + error.what();
    }
}

// The envelope and calibration a run stored (replay_runs.environment); members of the wrong
// type are left out, as the rest of a damaged environment is.
void readEnvelope(const nlohmann::json& environment, ReportData& report)
{
    auto finite = [](const nlohmann::json& object, const char* name) -> std::optional<double> {
        if (object.contains(name) && object[name].is_number() && std::isfinite(object[name].get<double>()))
            return object[name].get<double>();
        return std::nullopt;
    };
    auto text = [](const nlohmann::json& object, const char* name) {
        return object.contains(name) && object[name].is_string() ? object[name].get<std::string>() : std::string();
    };
    report.envelope = finite(environment, "envelope");
    report.envelopeSource = text(environment, "envelope_source");
    report.envelopeNote = text(environment, "envelope_note");
    if (environment.contains("calibration") && environment["calibration"].is_object()) {
        const nlohmann::json& c = environment["calibration"];
        ReportData::Calibration calibration;
        calibration.path = text(c, "path");
        calibration.sha256 = text(c, "sha256");
        calibration.used = c.contains("used") && c["used"].is_boolean() && c["used"].get<bool>();
        calibration.samples = c.contains("samples") && c["samples"].is_number_unsigned() ? c["samples"].get<std::uint64_t>() : 0;
        calibration.maxRatio = finite(c, "max_ratio").value_or(0.0);
        calibration.safetyFactor = finite(c, "safety_factor").value_or(0.0);
        calibration.quantileLevel = finite(c, "quantile_level").value_or(0.0);
        report.calibration = calibration;
    }
}

void readEnvironment(const StoredReplayRun& run, ReportData& report)
{
    try {
        const nlohmann::json environment = parseUntrustedJson(run.environmentJson, "replay environment");
        if (environment.contains("os") && environment["os"].is_string())
            report.operatingSystem = environment["os"].get<std::string>();
        if (environment.contains("cuda") && environment["cuda"].is_string())
            report.cudaVersion = environment["cuda"].get<std::string>();
        if (report.libtorchVersion.empty() && environment.contains("libtorch") && environment["libtorch"].is_string())
            report.libtorchVersion = environment["libtorch"].get<std::string>();
        if (environment.contains("regime") && environment["regime"].is_string())
            report.numericRegime = environment["regime"].get<std::string>();
        if (environment.contains("regime_reason") && environment["regime_reason"].is_string())
            report.numericRegimeReason = environment["regime_reason"].get<std::string>();
        if (environment.contains("determinism") && environment["determinism"].is_object())
            report.replayDeterminism = DeterminismProfile::parse(environment["determinism"].dump(), "replay environment: determinism").summary();
        if (environment.contains("kernel_profile") && environment["kernel_profile"].is_object()) {
            const nlohmann::json& profile = environment["kernel_profile"];
            if (profile.contains("choice") && profile["choice"].is_string())
                report.kernelChoice = profile["choice"].get<std::string>();
            std::string variables;
            if (profile.contains("variables") && profile["variables"].is_object())
                for (const auto& [name, value] : profile["variables"].items())
                    if (value.is_string())
                        variables += (variables.empty() ? "" : ", ") + name + "=" + value.get<std::string>();
            report.kernelProfile = report.kernelChoice + (variables.empty() ? "" : " (" + variables + ")");
        }
        readEnvelope(environment, report);
    } catch (const FormatError&) {
        // A damaged environment leaves these fields "not recorded"; the verdicts stand.
    }
}

void readTransactions(Database& db, std::int64_t tapeId, std::int64_t runId, ReportData& report)
{
    std::map<std::uint64_t, std::size_t> position;
    for (RunTransaction& row : loadRunTransactions(db, tapeId, runId)) {
        ReportTransaction t;
        static_cast<RunTransaction&>(t) = std::move(row);
        position[t.index] = report.transactions.size();
        report.transactions.push_back(std::move(t));
    }
    ReplayStore(db).forEachComparison(runId, [&](std::uint64_t index, TensorComparison&& comparison) {
        auto found = position.find(index);
        if (found == position.end())
            return;  // metrics without a verdict row: not part of the run's result
        ReportComparison c;
        c.transaction = index;
        c.tensor = std::move(comparison.tensor);
        c.slot = std::move(comparison.slot);
        c.verdict = comparison.verdict;
        c.metrics = comparison.metrics;
        c.note = std::move(comparison.note);
        report.transactions[found->second].comparisons.push_back(std::move(c));
    });
}

void readLossSeries(Database& db, std::int64_t tapeId, ReportData& report)
{
    RecordedLosses series = loadRecordedLosses(db, tapeId);
    report.lossIndex = std::move(series.indexes);
    report.loss = std::move(series.losses);
}

// What the report prints from rows no seal this reader trusts covers (ReportData::unvouchedRows):
// every tape's ingested rows, the notes, and the stored programs, whose bytes are checked
// against their digest.
void readUnvouchedRows(Database& db, ReportData& report)
{
    const std::optional<PublicKey> ownKey = AuditorKey::existingPublicKey();
    const std::vector<TrustedKey> trusted = readTrustedKeys();
    for (const TapeSealCheck& check : unvouchedTapes(db, ownKey, trusted))
        report.unvouchedRows.push_back(check.explanation);
    // Seals whose tape or run is gone: a row renumbered (a run moved off the report, or out of
    // its seal's reach) reads as one never sealed unless its seal is missed.
    Statement orphans = db.prepare("SELECT 'run ' || run_id FROM run_seals WHERE run_id NOT IN (SELECT id FROM replay_runs)"
                                   " UNION ALL SELECT 'tape ' || tape_id FROM tape_seals WHERE tape_id NOT IN (SELECT id FROM tapes)");
    while (orphans.step())
        report.unvouchedRows.push_back("the case holds the seal of " + orphans.text(0) + ", which it no longer holds (renumbered or removed)");
    // Every run of the case whose rows changed under its seal, whichever tape it names now: a run
    // moved to another tape would leave this report's list of runs without a word.
    std::vector<std::int64_t> runs;
    Statement ids = db.prepare("SELECT id FROM replay_runs WHERE tape_id <> ?1 ORDER BY id");
    ids.bind(1, report.tapeId);
    while (ids.step())
        runs.push_back(ids.int64(0));
    for (std::int64_t run : runs)
        if (checkRunSeal(db, run, ownKey, trusted).state == RunSealCheck::State::Altered)
            report.unvouchedRows.push_back("run " + std::to_string(run) + " of the case was altered after it was sealed");
    for (const TransactionNote& note : report.auditorNotes) {
        const std::optional<std::string> trust = note.signer ? trustedSignerNote(*note.signer, ownKey, trusted) : std::nullopt;
        report.auditorNoteSigners.push_back(note.signer ? keyFingerprint(*note.signer) + trust.value_or(" (not a key this reader trusts)")
                                                        : std::string("unsigned"));
    }
    // Every signed note of the case, on whichever tape it is now: a note moved off this tape
    // would leave the report without a word.
    std::vector<std::int64_t> notedTapes;
    Statement noted = db.prepare("SELECT DISTINCT tape_id FROM transaction_notes ORDER BY tape_id");
    while (noted.step())
        notedTapes.push_back(noted.int64(0));
    for (std::int64_t tapeId : notedTapes)
        for (const TransactionNote& note : TransactionNotes(db, tapeId).all())
            if (note.signer && !note.signatureHolds)
                report.unvouchedRows.push_back("the note on transaction " + std::to_string(note.index) + " of tape " + std::to_string(tapeId) +
                                               " was changed after key " + keyFingerprint(*note.signer) + " signed it");
    if (db.queryInt64("SELECT count(*) FROM transaction_notes WHERE tape_id NOT IN (SELECT id FROM tapes)").value_or(0) > 0)
        report.unvouchedRows.push_back("the case holds notes on a tape it does not hold (renumbered or removed)");
    // Every stored program, as a program's presence is read by its digest: bytes changed, or a
    // digest changed, would make a program present absent or stand for another.
    Statement programs = db.prepare("SELECT sha256, content FROM programs WHERE content IS NOT NULL ORDER BY sha256");
    while (programs.step())
        if (toHex(Sha256::of(programs.blob(1))) != programs.text(0))
            report.unvouchedRows.push_back("the program the case stores under digest " + programs.text(0) +
                                           " is not that program (its bytes or digest were changed after they were stored)");
}

void collectWorst(ReportData& report)
{
    std::vector<ReportComparison> candidates;
    for (const ReportTransaction& t : report.transactions)
        for (const ReportComparison& c : t.comparisons)
            if (c.verdict != Verdict::Exact || !c.metrics.bitwiseEqual) {
                candidates.push_back(c);
                candidates.back().note = "transaction " + std::to_string(t.index) + (c.note.empty() ? "" : ": " + c.note);
            }
    const std::size_t keep = std::min(candidates.size(), kWorstDivergences);
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep), candidates.end(), worseThan);
    candidates.resize(keep);
    report.worstDivergences = std::move(candidates);
}

void addSampling(ReportData& report)
{
    SelectionSpec spec;
    try {
        spec = SelectionSpec::parse(report.selection);
    } catch (const Error&) {
        report.samplingNote = "No statistical statement: the selection '" + report.selection + "' is not understood by this version.";
        return;
    }
    switch (spec.kind) {
    case SelectionSpec::Kind::Random: break;
    case SelectionSpec::Kind::All:
        report.samplingNote = "No statistical statement is needed: every transaction was selected, so the verdict counts are the whole answer.";
        return;
    case SelectionSpec::Kind::Stratified:
        report.samplingNote = "No statistical statement: a stratified selection draws a fixed number from each snapshot segment, so "
                              "transactions are not equally likely to be chosen and the uniform-sampling bound does not apply.";
        return;
    case SelectionSpec::Kind::TopQ:
        report.samplingNote = "No statistical statement: top-q chooses the transactions with the largest recorded updates, not at "
                              "random, so it says nothing about the others.";
        return;
    case SelectionSpec::Kind::Ids:
    case SelectionSpec::Kind::Range:
        report.samplingNote = "No statistical statement: the transactions were chosen by hand (ids or a range), not at random, so "
                              "they say nothing about the others.";
        return;
    case SelectionSpec::Kind::Sampled:
        report.samplingNote = "No statistical statement: 'sampled' replays the transactions the recorder chose to carry full checks; "
                              "that choice was made by the trainer's side, so it is not an audit sample.";
        return;
    }
    if (report.shard) {
        report.samplingNote = "No statistical statement: this run replayed shard " + report.shard->toString() +
                              " of the random sample, not the whole of it; the merged run of every shard (zkdv-audit merge) makes it.";
        return;
    }
    if (!report.seal.vouched()) {
        report.samplingNote = "No statistical statement: the replay's results cannot be vouched for (" + report.seal.explanation + ").";
        return;
    }
    if (!report.unvouchedRows.empty()) {
        report.samplingNote = "No statistical statement: rows of the case cannot be vouched for (" + report.unvouchedRows.front() + ").";
        return;
    }
    if (report.runStatus != RunStatus::Finished) {
        report.samplingNote = "No statistical statement: the replay did not finish, so the transactions replayed are not the whole "
                              "random sample.";
        return;
    }
    std::uint64_t sampled = 0, failures = 0;
    for (const ReportTransaction& t : report.transactions)
        if (t.selected) {
            ++sampled;
            if (!passes(t.verdict))
                ++failures;
        }
    if (sampled == 0 || report.transactionCount == 0 || sampled > report.transactionCount) {
        report.samplingNote = "No statistical statement: no selected transaction was replayed.";
        return;
    }
    // A bound that counts every transaction as bad ("at most 100 %") says nothing: when
    // nothing could be checked, the report says that instead.
    if (report.comparisonCount == 0 || report.unverifiable >= sampled) {
        report.samplingNote = "No statistical statement: nothing was verified (no replayed transaction could be compared with the tape).";
        return;
    }
    report.sampling = report_detail::samplingStatement(report.transactionCount, sampled, failures, report.seed, report.seedSource);
}

}  // namespace

ReportData buildAuditReport(CaseStore& store, const ReportOptions& options)
{
    ReplayStore replays(store.database());
    const std::vector<StoredReplayRun> allRuns = replays.runs(0);
    const CaseTape tape = chooseTape(store, options.tapeId, allRuns, options.runId);

    const StoredReplayRun* run = nullptr;
    for (const StoredReplayRun& candidate : allRuns) {
        if (options.runId != 0 ? candidate.id == options.runId : candidate.tapeId == tape.id) {
            run = &candidate;
            break;  // newest first
        }
    }
    if (options.runId != 0 && !run)
        throw ReportError("the case " + store.path() + " has no replay run " + std::to_string(options.runId));
    if (run && run->tapeId != tape.id)
        throw ReportError("replay run " + std::to_string(run->id) + " replayed tape " + std::to_string(run->tapeId) + ", not tape " +
                          std::to_string(tape.id));
    if (!run)
        throw ReportError("tape " + std::to_string(tape.id) + " of " + store.path() +
                          " has not been replayed; replay first: zkdv-audit replay " + shellWord(store.path()) + " --select …");

    ReportData report;
    report.casePath = store.path();
    report.generatedAt = utcNow();
    report.zkdvVersion = kVersion;

    report.tapeId = tape.id;
    report.tapePath = tape.path;
    report.fileSha256 = tape.fileSha256;
    report.chainHead = tape.chainHead;
    report.tapeSize = tape.size;
    report.tapeStatus = tape.status;
    report.transactionCount = tape.transactionCount;
    report.snapshotCount = tape.snapshotCount;
    report.recordCount = tape.recordCount;
    report.producer = tape.producer;
    report_detail::readSigner(tape, options, report);
    report.runTransactionsBefore = tape.transactionsBefore;
    report.runLink = tape.link.status;
    report.runLinkText = tape.link.describe();
    report.runLinkPreviousTape = tape.link.previousTapeId;
    report.runLinkProblem = tape.link.problem;
    report.forkedWith = tape.link.forkedWith;
    report.runTapes = runTapes(store.database(), tape.id);
    readTrainingSide(tape, report);
    if (tape.transactionCount > 0 && !replays.snapshotRecord(tape.id, tape.transactionCount)) {
        const auto interval = static_cast<std::uint64_t>(std::max(1, tape.snapshotInterval));
        report.endsWithoutSnapshotFrom = tape.transactionCount / interval * interval;
    }
    report.tapeSampling = tapeSamplingPlausibility(store.database(), tape);

    report.programKind = tape.programKind;
    report.programSha256 = tape.programSha256;
    report.programPresent = tape.programPresent;
    report.programCheck = run->programCheck;
    if (!run->programCheck)
        report.programCheckDetail = "the case holds no program check for this run";
    else if (*run->programCheck != ProgramCheck::Matched)
        report.programCheckDetail = run->problem;

    report.optimizerContract = tape.optimizerContract;
    readModel(store.database(), tape.id, report);

    report.runId = run->id;
    report.runStatus = run->status;
    report.device = run->device;
    report.libtorchVersion = run->libtorchVersion;
    report.replayZkdvVersion = run->zkdvVersion;
    readEnvironment(*run, report);
    report.selection = run->selection;
    report.seed = run->seed;
    report.seedSource = run->seedSource;
    report.tolerance = run->tolerance;
    report.selectedCount = run->selectedCount;
    report.replayedCount = run->replayed;
    report.exact = run->exact;
    report.withinTolerance = run->withinTolerance;
    report.diverged = run->diverged;
    report.unverifiable = run->unverifiable;
    report.trainersFailures = run->trainersFailures;
    report.runProblem = run->problem;
    report.seal = checkRunSeal(store.database(), run->id);
    if (run->shardIndex)
        report.shard = ShardSpec{*run->shardIndex, run->shardCount};
    if (run->merged())
        report.mergedShards = mergedShards(store.database(), run->id);
    const bool severalTapes = store.tapes().size() > 1;
    // A merged run is redone as one run, on the device its first shard used.
    const std::string redoDevice = report.mergedShards.empty() ? run->device : report.mergedShards.front().device;
    report.redoCommand = "zkdv-audit replay " + shellWord(store.path()) + (severalTapes ? " --tape " + std::to_string(tape.id) : "") +
                         " --select " + shellWord(run->selection) + " --seed " + std::to_string(run->seed) + " --device " +
                         shellWord(redoDevice) + " --tolerance " + shellWord(run->tolerance) +
                         (report.kernelChoice == "host" ? " --kernels host" : "") +
                         (report.shard ? " --shard " + report.shard->toString() + " --into SHARD.zkaudit" : "");

    for (const StoredReplayRun& other : allRuns) {
        if (other.tapeId != tape.id || other.id == run->id)
            continue;
        ReportOtherRun entry;
        entry.id = other.id;
        entry.status = other.status;
        entry.selection = other.selection;
        entry.seed = other.seed;
        entry.seedSource = other.seedSource;
        entry.device = other.device;
        entry.startedAt = other.startedAt;
        entry.replayed = other.replayed;
        entry.exact = other.exact;
        entry.withinTolerance = other.withinTolerance;
        entry.diverged = other.diverged;
        entry.unverifiable = other.unverifiable;
        entry.trainersFailures = other.trainersFailures;
        const RunSealCheck check = checkRunSeal(store.database(), other.id);
        entry.vouched = check.vouched();
        entry.sealState = check.state;
        entry.finding = check.finding;
        if (entry.vouched && other.diverged > 0)
            for (const StoredVerdict& verdict : replays.verdicts(other.id))
                if (verdict.verdict == Verdict::Diverged && entry.divergedTransactions.size() < kWorstDivergences)
                    entry.divergedTransactions.push_back(verdict.index);
        report.otherRuns.push_back(std::move(entry));
    }
    // The earlier failures the run's seal recorded must still be in the case, failing.
    if (report.seal.finding)
        for (std::int64_t failed : report.seal.finding->earlierFailedRuns) {
            auto other = std::find_if(report.otherRuns.begin(), report.otherRuns.end(), [&](const ReportOtherRun& o) { return o.id == failed; });
            if (other == report.otherRuns.end())
                report.vanishedFailures.push_back({failed, "no longer in the case"});
            else if (!(other->finding && other->finding->failed()))
                report.vanishedFailures.push_back(
                    {failed, other->sealState == RunSealCheck::State::Unsigned ? "stripped of its seal" : "no longer says so under a trusted seal"});
        }

    readTransactions(store.database(), tape.id, run->id, report);
    for (const ReportTransaction& t : report.transactions)
        report.comparisonCount += t.comparisons.size();
    readLossSeries(store.database(), tape.id, report);
    report.auditorNotes = TransactionNotes(store.database(), tape.id).all();
    readUnvouchedRows(store.database(), report);
    collectWorst(report);
    addSampling(report);
    report_detail::writeConclusion(report);
    report_detail::requireTrustedSigner(report);
    return report;
}

}  // namespace zkdv
