#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>

#include "case_access.h"
#include "command_runner.h"
#include "commands.h"
#include "replay_json.h"
#include "summary_json.h"
#include "terminal_progress.h"
#include "zkdv/report/audit_report.h"
#include "zkdv/store/audit_file.h"
#include "zkdv/store/case_contents.h"
#include "zkdv/store/database.h"
#include "zkdv/store/provenance_checks.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/tape_seal.h"
#include "zkdv/tape/gradient_transform_summary.h"
#include "zkdv/tape/shape_text.h"
#include "zkdv/tape/schedule_statement.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/trainer_keyring.h"
#include "zkdv/workflow/tape_summary_text.h"
#include "zkdv/workflow/tape_provenance.h"

namespace zkdv::cli {

namespace {

constexpr ProvenanceKind kProvenanceKinds[] = {ProvenanceKind::Dataset, ProvenanceKind::StartCheckpoint, ProvenanceKind::FinalModel};

// The newest check of each kind the workstation ran for the tape (its case overview's links).
nlohmann::json provenanceJson(Database& db, std::int64_t tapeId)
{
    nlohmann::json checks = nlohmann::json::array();
    ProvenanceChecks stored(db, tapeId);
    for (ProvenanceKind kind : kProvenanceKinds)
        if (const std::optional<ProvenanceCheck> check = stored.latest(kind))
            checks.push_back({{"kind", provenanceKindName(kind)},
                              {"path", check->path},
                              {"sha256", check->sha256.empty() ? nlohmann::json() : nlohmann::json(check->sha256)},
                              {"ok", check->ok},
                              {"detail", check->detail},
                              {"checked_at", check->checkedAt},
                              {"text", provenanceCheckText(check)}});
    return checks;
}

// Who signed a tape, as this auditor's trainer keyring judges it: a key it does not hold, or no
// signature where it holds keys, is warned of on stderr as verify does.
SignatureTrust signerTrust(const TrainerKeyring& keyring, const std::optional<std::string>& signer, const std::string& where)
{
    const SignatureTrust trust = keyring.trustOf(signer);
    if (trust == SignatureTrust::UnknownKey || trust == SignatureTrust::UnsignedExpected)
        std::fprintf(stderr, "warning: %s: %s\n", where.c_str(), untrustedSignerText(trust, signer.value_or("")).c_str());
    return trust;
}

std::optional<std::string> signerOf(const CaseTape& tape)
{
    return tape.isSigned() ? std::optional<std::string>(tape.signerKeyId) : std::nullopt;
}

int tapeInfo(const std::string& path, bool json, bool quiet, const TrainerKeyring& keyring)
{
    TerminalProgress progress(!quiet);
    ScanOptions options;
    options.progress = &progress;
    GradientTransformSummary gradients;
    TapeSummary summary = scanTape(path, &gradients, options);
    progress.finish();
    // As verify: an incomplete tape is neither signed nor unsigned yet (its seal is missing).
    const std::optional<std::string> signer = summary.signer ? std::optional<std::string>(summary.signer->keyId) : std::nullopt;
    const std::optional<SignatureTrust> trust = summary.complete() ? std::optional<SignatureTrust>(signerTrust(keyring, signer, path)) : std::nullopt;
    if (json) {
        nlohmann::json out = {{"kind", "tape"}, {"tape", summaryJson(summary)}};
        out["tape"]["signature_trust"] = trust ? nlohmann::json(signatureTrustName(*trust)) : nlohmann::json();
        out["root"] = summary.root ? rootJson(*summary.root) : nlohmann::json(nullptr);
        nlohmann::json uses = nlohmann::json::array();
        for (const GradientTransformUse& use : gradients.uses())
            uses.push_back({{"transforms", use.transforms}, {"transactions", use.transactions}, {"first", use.first}, {"last", use.last}});
        out["gradient_transforms"] = {{"uses", uses}, {"other_transactions", gradients.others()}, {"skipped_steps", gradients.skipped()}};
        std::printf("%s\n", toJsonText(out, 2).c_str());
        return kExitOk;
    }
    std::printf("tape %s\n  %s\n  chain head %s\n", path.c_str(), summaryLine(summary).c_str(), toHex(summary.chainHead).c_str());
    if (trust)
        std::printf("  %s\n", signatureText(*trust, signer.value_or("")).c_str());
    if (!summary.root)
        return kExitOk;
    const RootRecord& root = *summary.root;
    std::printf("producer   %s %s (torch %s, %s%s)\n", root.producerName.c_str(), root.producerVersion.c_str(), root.torchVersion.c_str(),
                root.device.c_str(),
                root.intraOpThreads > 0 ? (", " + std::to_string(root.intraOpThreads) + " intra-op thread(s)").c_str() : "");
    std::printf("numbers    %s\n", root.determinism ? root.determinism->summary().c_str() : "no determinism profile recorded (before format 1.13)");
    std::printf("program    %s %s, %s\n", root.programKind.c_str(), toHex(root.programSha256).c_str(),
                root.programEmbedded ? "embedded" : "supplied separately");
    std::printf("optimizer  %s\n", root.optimizerContract.c_str());
    for (std::size_t g = 0; g < root.optimizerGroups.size(); ++g)
        std::printf("  group %zu: %zu parameters, %s\n", g, root.optimizerGroups[g].parameters.size(), root.optimizerGroups[g].optionsJson.c_str());
    std::printf("  schedule: %s\n", scheduleStatement(root).c_str());
    if (root.optimizerSchedule && root.optimizerSchedule->checked())
        std::printf("  scheduler: %s, at epoch %llu when the tape began\n", root.optimizerSchedule->schedulerJson.c_str(),
                    static_cast<unsigned long long>(root.optimizerSchedule->epoch));
    std::printf("gradients  %s\n", gradients.text(summary.transactionCount).c_str());
    if (root.gradScaler)
        std::printf("  grad scaler: %s (the rule and the scale of transaction 0)\n", gradScalerDeclarationJson(*root.gradScaler).c_str());
    if (root.resumes)
        std::printf("resumes    the tape of chain head %s (%llu bytes): its transaction 0 is the run's %llu, from the state of digest %s\n",
                    toHex(root.resumes->chainHead).c_str(), static_cast<unsigned long long>(root.resumes->size),
                    static_cast<unsigned long long>(root.resumes->transactionsBefore), toHex(root.resumes->stateDigest).c_str());
    std::printf("model      %zu parameters, %zu buffers\n", root.parameters.size(), root.buffers.size());
    for (const TensorSpec& spec : root.parameters)
        std::printf("  parameter %-32s %-5s %s\n", spec.name.c_str(), std::string(dtypeName(spec.dtype)).c_str(), shapeText(spec.shape).c_str());
    for (const TensorSpec& spec : root.buffers)
        std::printf("  buffer    %-32s %-5s %s\n", spec.name.c_str(), std::string(dtypeName(spec.dtype)).c_str(), shapeText(spec.shape).c_str());
    std::printf("snapshots  every %d transactions\n", root.snapshotInterval);
    std::printf("sampling   update check %g, state check %g, seed %llu, %s\n", root.updateCheckProbability, root.stateCheckProbability,
                static_cast<unsigned long long>(root.samplingSeed), std::string(samplingGuaranteeText(samplingGuaranteeOf(root.formatMinor))).c_str());
    std::printf("%s", samplingPlausibilityLines(*summary.samplingPlausibility()).c_str());
    std::printf("pipeline   max in flight %d, overlap %s\n", root.maxInFlight, root.overlap.c_str());
    std::printf("metadata   %s\n", root.metadataJson.c_str());
    return kExitOk;
}

int caseInfo(const std::string& path, bool json, const TrainerKeyring& keyring)
{
    std::unique_ptr<CaseStore> opened = openCaseForReading(path);
    CaseStore& store = *opened;
    std::vector<CaseTape> tapes = store.tapes();
    const SampledCheckCounts checks = countSampledChecks(store.database());
    const std::int64_t deltas = checks.withDeltas;
    const std::int64_t digests = checks.withStateDigest;
    ReplayStore replays(store.database());
    // Whether each tape's rows are what its ingest sealed (zkdv/store/tape_seal.h): what follows
    // about a tape is a fact only then.
    const std::optional<PublicKey> ownKey = AuditorKey::existingPublicKey();
    const std::vector<TrustedKey> trusted = readTrustedKeys();
    if (json) {
        nlohmann::json out = {{"json_version", kCliJsonVersion}, {"kind", "case"}, {"path", path}, {"tapes", nlohmann::json::array()},
                              {"transactions_with_deltas", deltas}, {"transactions_with_state_digest", digests}};
        for (const CaseTape& tape : tapes) {
            nlohmann::json entry = caseTapeJson(tape);
            const TapeSealCheck rows = checkTapeSeal(store.database(), tape.id, ownKey, trusted);
            entry["rows"] = {{"state", runSealStateName(rows.state)}, {"signer", rows.signer}, {"explanation", rows.explanation}};
            entry["signature_trust"] = signatureTrustName(signerTrust(keyring, signerOf(tape), path + ", tape " + std::to_string(tape.id)));
            entry["sampling_plausibility"] = samplingPlausibilityJson(tapeSamplingPlausibility(store.database(), tape));
            entry["provenance"] = provenanceJson(store.database(), tape.id);
            out["tapes"].push_back(entry);
        }
        nlohmann::json runList = nlohmann::json::array();
        for (const StoredReplayRun& run : replays.runs()) {
            nlohmann::json entry = storedRunJson(run);
            entry["seal"] = runSealJson(checkRunSeal(store.database(), run.id));
            const ReportData report = buildAuditReport(store, ReportOptions{run.tapeId, run.id, {}, false});
            entry["outcome"] = std::string(auditOutcomeName(report.outcome));
            entry["headline"] = report.headline;
            nlohmann::json failures = nlohmann::json::array();
            for (const StoredVerdict& verdict : replays.verdicts(run.id))
                if (!passes(verdict.verdict))
                    failures.push_back({{"index", verdict.index}, {"verdict", verdictName(verdict.verdict)}, {"detail", verdict.detail},
                                        {"worst_tensor", verdict.worstTensor}, {"worst_slot", verdict.worstSlot}});
            entry["failures"] = failures;
            runList.push_back(entry);
        }
        out["replay_runs"] = runList;
        std::printf("%s\n", toJsonText(out, 2).c_str());
        return kExitOk;
    }
    const std::vector<StoredReplayRun> runs = replays.runs();
    std::printf("case %s: %zu tape%s, %zu replay run%s\n", path.c_str(), tapes.size(), tapes.size() == 1 ? "" : "s", runs.size(),
                runs.size() == 1 ? "" : "s");
    for (const CaseTape& tape : tapes) {
        std::printf("tape %lld  %s\n", static_cast<long long>(tape.id), tape.path.c_str());
        const TapeSealCheck rows = checkTapeSeal(store.database(), tape.id, ownKey, trusted);
        if (rows.vouched())
            std::printf("  rows sealed at ingest by %s\n", rows.signer.c_str());
        else
            std::printf("  rows NOT VOUCHED (%s): %s; nothing below about this tape is vouched for\n", runSealStateName(rows.state),
                        rows.explanation.c_str());
        const SignatureTrust trust = signerTrust(keyring, signerOf(tape), path + ", tape " + std::to_string(tape.id));
        std::printf("  %s%s\n", signatureText(trust, tape.signerKeyId).c_str(),
                    tape.isSigned() ? (" (" + tape.signerAlgorithm + " key " + tape.signerKeyId + ")").c_str() : "");
        std::printf("  status %s, %llu transactions, %llu snapshots, %llu bytes%s\n", tape.status.c_str(),
                    static_cast<unsigned long long>(tape.transactionCount), static_cast<unsigned long long>(tape.snapshotCount),
                    static_cast<unsigned long long>(tape.size), tape.embedded ? ", payloads embedded" : "");
        std::printf("  chain head  %s\n  file sha256 %s\n", tape.chainHead.c_str(),
                    tape.fileSha256.empty() ? "not computed (ingest --sha256)" : tape.fileSha256.c_str());
        std::printf("  producer %s; optimizer %s; snapshots every %d\n", tape.producer.c_str(), tape.optimizerContract.c_str(),
                    tape.snapshotInterval);
        std::printf("  program %s %s (%s)\n", tape.programKind.c_str(), tape.programSha256.c_str(),
                    tape.programPresent ? "present in the case" : "missing: supply the program file");
        if (tape.link.status != TapeLinkStatus::StartsRun)
            std::printf("  run: transactions %llu-%llu of a resumed run; %s\n", static_cast<unsigned long long>(tape.transactionsBefore),
                        static_cast<unsigned long long>(tape.transactionsBefore + std::max<std::uint64_t>(tape.transactionCount, 1) - 1),
                        tape.link.describe().c_str());
        if (const std::optional<SamplingPlausibility> plausibility = tapeSamplingPlausibility(store.database(), tape))
            std::printf("%s", samplingPlausibilityLines(*plausibility).c_str());
        ProvenanceChecks stored(store.database(), tape.id);
        for (ProvenanceKind kind : kProvenanceKinds)
            if (const std::optional<ProvenanceCheck> check = stored.latest(kind))
                std::printf("  %s\n", provenanceCheckText(check).c_str());
    }
    std::printf("sampled checks: %lld transactions with full deltas, %lld with a state digest\n", static_cast<long long>(deltas),
                static_cast<long long>(digests));
    for (const StoredReplayRun& run : runs) {
        // The report's one conclusion, the same words everywhere (docs/report.md).
        const RunSealCheck seal = checkRunSeal(store.database(), run.id);
        const ReportData report = buildAuditReport(store, ReportOptions{run.tapeId, run.id, {}, false});
        const std::string outcome(auditOutcomeName(report.outcome));
        std::printf("replay run %lld (tape %lld) %s on %s, libtorch %s, %s seed %llu (%s), tolerance %s, started %s: %s\n",
                    static_cast<long long>(run.id), static_cast<long long>(run.tapeId), std::string(runStatusName(run.status)).c_str(), run.device.c_str(),
                    run.libtorchVersion.c_str(), run.selection.c_str(), static_cast<unsigned long long>(run.seed),
                    std::string(seedSourceName(run.seedSource)).c_str(), run.tolerance.c_str(),
                    run.startedAt.c_str(), outcome.c_str());
        if (run.shardIndex)
            std::printf("  shard %u/%u of the selection only; zkdv-audit merge joins the shards\n", *run.shardIndex, run.shardCount);
        for (const MergedShard& shard : report.mergedShards)
            std::printf("  merged shard %u: %s, run %lld on %s (%s), %llu replayed\n", shard.index, shard.file.c_str(),
                        static_cast<long long>(shard.shardRunId), shard.host.c_str(), shard.device.c_str(),
                        static_cast<unsigned long long>(shard.replayed));
        std::printf("  seal: %s%s%s\n", runSealStateName(seal.state), seal.signer.empty() ? "" : (", " + seal.signer).c_str(),
                    seal.vouched() ? "" : (": " + seal.explanation).c_str());
        std::printf("  %llu selected, %llu replayed: exact %llu, within tolerance %llu, diverged %llu, unverifiable %llu\n",
                    static_cast<unsigned long long>(run.selectedCount), static_cast<unsigned long long>(run.replayed),
                    static_cast<unsigned long long>(run.exact), static_cast<unsigned long long>(run.withinTolerance),
                    static_cast<unsigned long long>(run.diverged), static_cast<unsigned long long>(run.unverifiable));
        std::printf("  %s\n", report.headline.c_str());
        if (!run.problem.empty())
            std::printf("  %s\n", run.problem.c_str());
        int shown = 0;
        for (const StoredVerdict& verdict : replays.verdicts(run.id)) {
            if (passes(verdict.verdict))
                continue;
            if (++shown > 10) {
                std::printf("  …\n");
                break;
            }
            std::printf("  transaction %llu: %s\n", static_cast<unsigned long long>(verdict.index), verdict.detail.c_str());
        }
    }
    return kExitOk;
}

}  // namespace

int runInfo(int argc, char** argv)
{
    ArgumentParser parser("zkdv-audit info TAPE|CASE [--json]",
                          "Describes a tape (status, producer, model layout, optimizer, program, sampling policy)\n"
                          "or an audit case (its tapes, programs and replay runs). Who signed a tape is judged\n"
                          "with the trainer-keys folder (docs/signing.md): a key not in it, or no signature\n"
                          "where it holds keys, is a warning; a folder others may change is refused (exit 2).");
    parser.setPositionals("TAPE|CASE", "a tape (*.zkdv) or a case (*.zkaudit)", 1, false);
    parser.addFlag("json", "print JSON on stdout");
    parser.addFlag("quiet", "no progress on stderr");
    return runCommand("info", parser, argc, argv, [&]() {
        const std::string& path = parser.positionals().front();
        switch (sniffAuditFile(path)) {
        case AuditFileKind::Tape: return tapeInfo(path, parser.has("json"), parser.has("quiet"), TrainerKeyring::load({}));
        case AuditFileKind::Case: return caseInfo(path, parser.has("json"), TrainerKeyring::load({}));
        case AuditFileKind::Other: break;
        }
        throw UsageError(path + " is neither a ZKDV tape nor an audit case");
    });
}

}  // namespace zkdv::cli
