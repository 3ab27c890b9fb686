// The report's conclusion in plain words: headline, first-page warnings and the sampling
// statement (docs/report.md, "Headline and warnings").

#include "report_conclusion.h"
#include "report_signer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "zkdv/audit/pass_rule.h"

namespace zkdv::report_detail {

namespace {

std::string count(std::uint64_t n, const char* singular, const char* plural)
{
    return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

// "7", "7 and 9", "7, 9 and 12", "7, 9, 12, 15, 20 and 3 more".
std::string indexList(const std::vector<std::uint64_t>& indexes)
{
    constexpr std::size_t kShown = 5;
    std::vector<std::string> parts;
    for (std::size_t i = 0; i < indexes.size() && i < kShown; ++i)
        parts.push_back(std::to_string(indexes[i]));
    if (indexes.size() > kShown)
        parts.push_back(std::to_string(indexes.size() - kShown) + " more");
    std::string text;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i > 0)
            text += i + 1 == parts.size() ? " and " : ", ";
        text += parts[i];
    }
    return text;
}

std::vector<std::uint64_t> indexesWith(const ReportData& report, Verdict verdict)
{
    std::vector<std::uint64_t> result;
    for (const ReportTransaction& t : report.transactions)
        if (t.verdict == verdict)
            result.push_back(t.index);
    return result;
}

const ReportTransaction* firstWith(const ReportData& report, Verdict verdict)
{
    for (const ReportTransaction& t : report.transactions)
        if (t.verdict == verdict)
            return &t;
    return nullptr;
}

// The unverifiable transactions the tape's own program or tape is to blame for (true), or
// the auditor's machine (false).
std::vector<const ReportTransaction*> unverifiableBlaming(const ReportData& report, bool trainer)
{
    std::vector<const ReportTransaction*> result;
    for (const ReportTransaction& t : report.transactions)
        if (t.verdict == Verdict::Unverifiable && blamesTrainer(t.cause) == trainer)
            result.push_back(&t);
    return result;
}

std::vector<std::uint64_t> indexesOf(const std::vector<const ReportTransaction*>& transactions)
{
    std::vector<std::uint64_t> indexes;
    for (const ReportTransaction* t : transactions)
        indexes.push_back(t->index);
    return indexes;
}

// "2 diverged transactions and 1 the tape's own program made unreplayable"
std::string faultText(std::uint64_t diverged, std::uint64_t trainersFailures)
{
    std::string text;
    if (diverged > 0)
        text = count(diverged, "diverged transaction", "diverged transactions");
    if (trainersFailures > 0)
        text += (text.empty() ? "" : " and ") + count(trainersFailures, "transaction", "transactions") +
                " the tape's own program or tape made unreplayable within the auditor's limits";
    return text.empty() ? std::string("earlier failed runs") : text;
}

std::string lastTransactionText(const ReportData& report)
{
    return report.transactionCount == 0 ? std::string("the start of training (it holds no transaction)")
                                         : "transaction " + std::to_string(report.transactionCount - 1);
}

// The bound a within-tolerance pass used: the tolerance and, across environments, the envelope.
std::string roundingBoundText(const ReportData& report)
{
    std::string text;
    if (report.numericRegime == "cross-environment") {
        text = "; judged across numerical environments";
        if (report.envelope) {
            char envelope[64];
            std::snprintf(envelope, sizeof envelope, "%.4g", *report.envelope);
            text += std::string(" with an envelope of ") + envelope + " u of the model's scale" +
                    (report.envelopeSource.empty() ? std::string() : " (" + report.envelopeSource + ")");
        }
        if (!report.numericRegimeReason.empty())
            text += " because " + report.numericRegimeReason;
    }
    return text;
}

}  // namespace

std::string percentText(double fraction)
{
    char buffer[64];
    const double percent = fraction * 100.0;
    std::snprintf(buffer, sizeof buffer, "%.3g%%", percent);
    if (percent >= 1000.0 || (percent > 0 && percent < 0.001))
        std::snprintf(buffer, sizeof buffer, "%.3e%%", percent);
    return buffer;
}

std::string seedStatement(std::uint64_t seed, SeedSource seedSource)
{
    const std::string s = std::to_string(seed);
    switch (seedSource) {
    case SeedSource::Drawn:
        return "The seed " + s + " was drawn from the operating system's random source when the audit started, so the trainer could not "
               "know which transactions would be replayed.";
    case SeedSource::Given:
        return "The auditor chose seed " + s + " (it was not drawn at audit time); the bound holds only if the trainer could not know " + s +
               " before the audit.";
    case SeedSource::Unknown: break;
    }
    return "The run does not record whether seed " + s + " was drawn at audit time or chosen by the auditor (it was stored by a zkdv "
           "before case schema 9); the bound holds only if the trainer could not know " + s + " before the audit.";
}

SamplingStatement samplingStatement(std::uint64_t population, std::uint64_t sampled, std::uint64_t failures, std::uint64_t seed,
                                    SeedSource seedSource)
{
    SamplingStatement s;
    s.population = population;
    s.sampled = sampled;
    s.failures = failures;
    s.badUpper95 = hypergeometricUpperCount(population, sampled, failures, 0.95);
    s.badUpper99 = hypergeometricUpperCount(population, sampled, failures, 0.99);
    s.upper95 = static_cast<double>(s.badUpper95) / static_cast<double>(population);
    s.upper99 = static_cast<double>(s.badUpper99) / static_cast<double>(population);
    s.clopperPearson95 = clopperPearsonUpperBound(sampled, failures, 0.95);
    s.clopperPearson99 = clopperPearsonUpperBound(sampled, failures, 0.99);
    s.method = "hypergeometric (exact, finite population)";
    s.sentence = count(sampled, "transaction", "transactions") + " of " + std::to_string(population) +
                 " were replayed, chosen uniformly at random (seed " + std::to_string(seed) + "), and " +
                 (failures == 0 ? std::string("none") : std::to_string(failures)) + (failures == 1 ? " failed" : " failed") +
                 ". With 95% confidence at most " + percentText(s.upper95) + " of all transactions are bad (" +
                 std::to_string(s.badUpper95) + " of " + std::to_string(population) + "); with 99% confidence at most " +
                 percentText(s.upper99) + " (" + std::to_string(s.badUpper99) + " of " + std::to_string(population) + "). " +
                 seedStatement(seed, seedSource);
    return s;
}

void writeConclusion(ReportData& report)
{
    report.warnings.clear();
    // A run resumed from checkpoints: this tape's own transactions are judged below whatever
    // its link, but its claim to continue another tape is part of what the report states.
    // A broken or missing link keeps the outcome from PASSED (below); a fork is said whatever
    // the outcome.
    if (report.runLink == TapeLinkStatus::Broken || report.runLink == TapeLinkStatus::PreviousMissing)
        report.warnings.push_back("This tape " + report.runLinkText +
                                  (report.runLink == TapeLinkStatus::Broken ? ": it is not part of that run." : "."));
    else if (!report.forkedWith.empty())
        report.warnings.push_back("This tape " + report.runLinkText + ": ask the trainer which of them the deployed model came from.");
    // A signature proves who made the tape only when the key is known to be the trainer's, and
    // a stripped one must not read better than a forger's (report_signer.h).
    if (std::string signer = signerWarning(report); !signer.empty())
        report.warnings.push_back(std::move(signer));
    // A property of the tape, whatever the run: so few sampled checks that no honest recorder
    // draws them (zkdv/tape/sampling_plausibility.h).
    const bool implausibleSampling = report.tapeSampling && report.tapeSampling->implausible();
    const std::string samplingFinding = implausibleSampling ? report.tapeSampling->finding() : std::string();
    auto warnSampling = [&] {
        if (implausibleSampling)
            report.warnings.push_back("Sampled checks: " + samplingFinding + ".");
    };
    // Rows nobody can vouch for prove nothing either way, a failure no more than a pass: the
    // report says so and what to do, and draws nothing from them.
    if (!report.seal.vouched()) {
        const bool altered = report.seal.state == RunSealCheck::State::Altered;
        // The rows were changed, but the seal still signs what the run had found: a failure
        // found stays found, whatever the rows say now.
        if (altered && report.seal.finding && report.seal.finding->failed()) {
            const RunFinding& found = *report.seal.finding;
            report.warnings.push_back("The replay results in this case were changed after zkdv stored them: " + report.seal.explanation +
                                      ". Redo the replay with: " + report.redoCommand + ".");
            report.outcome = AuditOutcome::Failed;
            report.headline = "FAILED: replay run " + std::to_string(report.runId) +
                              " was altered after it was sealed, but its seal still says it found " + faultText(found.diverged, found.trainersFailures) +
                              " — the training run recorded on this tape cannot be trusted.";
            return;
        }
        report.warnings.push_back(std::string(altered ? "The replay results in this case were changed after zkdv stored them: "
                                                      : "The replay results in this case cannot be vouched for: ") +
                                  report.seal.explanation + ". Redo the replay with: " + report.redoCommand + ".");
        if (report.tapeStatus != "sealed")
            report.warnings.push_back("This tape is incomplete (" + report.tapeStatus + "): it does not prove anything about training beyond " +
                                      lastTransactionText(report) + ".");
        warnSampling();
        report.outcome = AuditOutcome::NotVouched;
        report.headline = altered ? "NOT VOUCHED: the replay results in this case were altered after they were stored, so this report "
                                    "neither confirms nor refutes the tape; replay it again."
                                  : "NOT VOUCHED: the replay results in this case carry no seal this reader trusts, so this report "
                                    "neither confirms nor refutes the tape; replay it again.";
        return;
    }
    // Rows the report prints besides the run's (a tape's ingested rows, a note, a stored program)
    // that no seal this reader trusts covers: an edit cannot be told from a fact, so nothing is
    // concluded from them; a failure the run's own trusted seal records stays found.
    if (!report.unvouchedRows.empty()) {
        for (const std::string& row : report.unvouchedRows)
            report.warnings.push_back("Rows of this case cannot be vouched for: " + row + ".");
        if (!(report.seal.finding && report.seal.finding->failed())) {
            warnSampling();
            report.outcome = AuditOutcome::NotVouched;
            report.headline = "NOT VOUCHED: " + report.unvouchedRows.front() +
                              (report.unvouchedRows.size() > 1 ? " (and " + std::to_string(report.unvouchedRows.size() - 1) + " more)" : std::string()) +
                              "; this report neither confirms nor refutes the tape while the case holds them. Ingest the tape again (which "
                              "seals rows that are exactly what it gives), or into a new case, and replay it.";
            return;
        }
    }
    const std::vector<std::uint64_t> diverged = indexesWith(report, Verdict::Diverged);
    const std::vector<std::uint64_t> unverifiable = indexesWith(report, Verdict::Unverifiable);
    const std::vector<const ReportTransaction*> trainers = unverifiableBlaming(report, true);
    const std::vector<const ReportTransaction*> environment = unverifiableBlaming(report, false);
    const bool sealed = report.tapeStatus == "sealed";
    const bool programOk = report.programCheck == ProgramCheck::Matched;
    const bool finished = report.runStatus == RunStatus::Finished;
    // 1. Tampering or a faulty run found: always the first thing said.
    const std::size_t divergedWarning = report.warnings.size();
    if (!diverged.empty()) {
        const ReportTransaction* first = firstWith(report, Verdict::Diverged);
        report.warnings.push_back(
            "Tampering or a faulty training run was found: " +
            (diverged.size() == 1 ? "transaction " + indexList(diverged) + " does not" : "transactions " + indexList(diverged) + " do not") +
            " reproduce what the tape claims. Re-running the recorded training step gives a different result, so this tape does "
            "not truthfully record the training run" +
            (first && !first->detail.empty() ? " (transaction " + std::to_string(first->index) + ": " + first->detail + ")." : "."));
    }
    // 1a. The tape's own program made transactions unreplayable within the auditor's limits:
    // the trainer's failure, said with the cause (docs/replay.md, "Whose failure").
    if (!trainers.empty()) {
        const ReportTransaction& first = *trainers.front();
        report.warnings.push_back(
            "The tape's own program or tape made " + count(trainers.size(), "transaction", "transactions") + " (" +
            indexList(indexesOf(trainers)) + ") impossible to replay within the limits the auditor set: transaction " +
            std::to_string(first.index) + ": " + std::string(unverifiableCauseText(first.cause)) + " (" + first.detail + "); " +
            std::string(trainersFailureReason(first.cause)) + ".");
    }
    // 1b. What the tape's other runs found: a report of a later run that did not replay those
    // transactions must not read as a pass, nor may a failure vanish by editing or deleting
    // the run that found it.
    // Runs that found the same thing (the same counts and diverged transactions, or the same
    // sealed finding of altered runs) are named together in one warning, and a run that found
    // what this run found is named in this run's warning instead of a second one.
    struct SameFinding {
        bool altered = false;
        std::uint64_t diverged = 0, trainersFailures = 0;
        std::vector<std::uint64_t> transactions;  // the first few, of unaltered runs
        std::vector<const ReportOtherRun*> runs;
        std::size_t warning = 0;                  // its place in report.warnings
    };
    std::vector<SameFinding> findings;
    std::vector<const ReportOtherRun*> sameAsThisRun;
    const bool thisRunWarned = !diverged.empty();
    std::vector<const ReportOtherRun*> otherFailures;
    std::vector<const ReportOtherRun*> otherAltered;
    for (const ReportOtherRun& other : report.otherRuns) {
        const bool failedVouched = other.vouched && replayRunFailed(other.diverged, other.trainersFailures);
        const bool failedWhenSealed = other.finding && replayRunFailed(other.finding->diverged, other.finding->trainersFailures);
        if (failedVouched || failedWhenSealed) {
            otherFailures.push_back(&other);
            SameFinding found;
            found.altered = other.sealState == RunSealCheck::State::Altered;
            found.diverged = found.altered ? other.finding->diverged : other.diverged;
            found.trainersFailures = found.altered ? other.finding->trainersFailures : other.trainersFailures;
            if (!found.altered)
                found.transactions = other.divergedTransactions;
            const std::vector<std::uint64_t> ours(diverged.begin(), diverged.begin() + static_cast<std::ptrdiff_t>(std::min(diverged.size(), found.transactions.size())));
            if (thisRunWarned && !found.altered && found.trainersFailures == 0 && trainers.empty() && found.diverged == diverged.size() &&
                !found.transactions.empty() && found.transactions == ours) {
                sameAsThisRun.push_back(&other);
                continue;
            }
            auto same = std::find_if(findings.begin(), findings.end(), [&](const SameFinding& f) {
                return f.altered == found.altered && f.diverged == found.diverged && f.trainersFailures == found.trainersFailures &&
                       f.transactions == found.transactions;
            });
            if (same == findings.end()) {
                found.warning = report.warnings.size();
                report.warnings.emplace_back();
                findings.push_back(std::move(found));
                same = findings.end() - 1;
            }
            same->runs.push_back(&other);
        } else if (other.sealState == RunSealCheck::State::Altered) {
            otherAltered.push_back(&other);
            report.warnings.push_back("Replay run " + std::to_string(other.id) + " of this tape (" + other.selection + ", " + std::string(runStatusName(other.status)) +
                                      ") was altered after zkdv sealed it: its rows no longer match its seal, so what it found is unknown, "
                                      "and this report cannot pass the tape while the case holds it.");
        }
    }
    auto runOf = [](const ReportOtherRun* run) {
        return std::to_string(run->id) + " (" + run->selection + ", " + std::string(runStatusName(run->status)) + ")";
    };
    auto runsText = [&](const std::vector<const ReportOtherRun*>& runs) {
        std::string text;
        for (std::size_t i = 0; i < runs.size(); ++i)
            text += (i == 0 ? "" : i + 1 == runs.size() ? " and " : ", ") + runOf(runs[i]);
        return text;
    };
    for (const SameFinding& found : findings) {
        const ReportOtherRun& first = *found.runs.front();
        const std::string who = found.runs.size() == 1
                                    ? "Replay run " + std::to_string(first.id) + " of this tape (" + first.selection + ", " +
                                          std::string(runStatusName(first.status)) + ") "
                                    : "Replay runs " + runsText(found.runs) + " of this tape " + (found.altered ? "were" : "each") + " ";
        const std::string verb = found.altered ? (found.runs.size() == 1 ? "was altered after it was sealed, but its seal still says it found "
                                                                          : "altered after they were sealed, but their seals still say each found ")
                                               : std::string("found ");
        report.warnings[found.warning] = who + verb + faultText(found.diverged, found.trainersFailures) +
                                         (!found.transactions.empty() ? " (" + indexList(found.transactions) + ")" : std::string()) +
                                         ": this report is about run " + std::to_string(report.runId) + ", which does not undo " +
                                         (found.runs.size() == 1 ? "that finding." : "those findings.");
    }
    if (!sameAsThisRun.empty())
        report.warnings[divergedWarning] += " Replay run " + std::to_string(report.runId) + " (this report's) and replay " +
                                   (sameAsThisRun.size() == 1 ? "run " : "runs ") + runsText(sameAsThisRun) +
                                   " of this tape found the same.";
    for (const ReportVanishedFailure& vanished : report.vanishedFailures)
        report.warnings.push_back("Replay run " + std::to_string(vanished.runId) + " of this tape had found the tape at fault when run " +
                                  std::to_string(report.runId) + " was sealed, and is now " + vanished.now +
                                  ": that finding still stands.");
    const bool othersFailed = !otherFailures.empty() || !report.vanishedFailures.empty();
    // 1c. Sampled checks ground away.
    warnSampling();
    // The one pass rule of a run, and on top of it what the report asks of the tape: that
    // something was replayed and compared, that the tape is sealed, that its sampled checks
    // are plausible, and that no other run of it found the tape at fault or was altered. The headlines below say which failed.
    (void)othersFailed;  // each decides a headline below; only the last one confirms the tape

    // 2. An incomplete tape.
    if (report.tapeStatus == "truncated")
        report.warnings.push_back("This tape is incomplete (truncated at record " + std::to_string(report.recordCount) +
                                  " and never sealed): it does not prove anything about training beyond " + lastTransactionText(report) +
                                  ".");
    else if (report.tapeStatus == "unsealed")
        report.warnings.push_back("This tape is incomplete (never sealed): it does not prove anything about training beyond " +
                                  lastTransactionText(report) + ".");
    else if (!sealed)
        report.warnings.push_back("This tape's status is '" + report.tapeStatus + "': it may be incomplete.");
    // 2b. A sealed tape whose last segment ends at no snapshot (before format 1.5, tape
    // format 6.2): passing transactions there are weaker evidence than elsewhere.
    if (sealed && report.endsWithoutSnapshotFrom) {
        const std::uint64_t from = *report.endsWithoutSnapshotFrom, last = report.transactionCount - 1;
        report.warnings.push_back("This tape (format " + report.tapeFormat + ") ends without the state after its last transaction: " +
                                  (from == last ? "transaction " + std::to_string(last) + " changed"
                                                : "transactions " + std::to_string(from) + " to " + std::to_string(last) + " changed") +
                                  " the model after the last snapshot, and a replay compares that with no recorded state, only with "
                                  "their own checks, so a change of the model there within the tolerance would pass. Tapes of format "
                                  "1.5 and later end with that state.");
    }
    // 3. The program.
    if (!programOk) {
        std::string why;
        switch (report.programCheck.value_or(ProgramCheck::Missing)) {
        case ProgramCheck::Missing:
            why = report.programCheck ? "the training program the tape refers to is not in the case, so no step could be re-run"
                                      : report.programCheckDetail;
            break;
        case ProgramCheck::Mismatched:
            why = "the program supplied is not the one the tape was recorded with (its fingerprint differs), so it was not run";
            break;
        case ProgramCheck::NotReplayable: why = "this tape's program (" + report.programKind + ") cannot be re-executed"; break;
        case ProgramCheck::Matched: break;
        }
        report.warnings.push_back("The training program could not be checked: " + why +
                                  ". Nothing in this report confirms that training followed the recorded program.");
    }
    // 4. The run itself.
    if (report.shard)
        report.warnings.push_back("This run replayed only shard " + report.shard->toString() + " of the selection (" +
                                  std::to_string(report.selectedCount) + " of its transactions); the audit's conclusion is that of the "
                                  "merged run of every shard (zkdv-audit merge), not this one's.");
    if (!finished)
        report.warnings.push_back("The replay " + std::string(report.runStatus ? runStatusSentence(*report.runStatus) : "did not run") +
                                  ": only " + std::to_string(report.replayedCount) + " transactions were replayed (" +
                                  std::to_string(report.selectedCount) + " were selected).");
    if (!report.runProblem.empty() && programOk)
        report.warnings.push_back("The replay could not check the transactions: " + report.runProblem + ".");
    if (diverged.empty() && !environment.empty() && report.runProblem.empty())
        report.warnings.push_back(count(environment.size(), "transaction", "transactions") + " could not be checked on the auditor's machine (" +
                                  indexList(indexesOf(environment)) + "): " + environment.front()->detail);

    // The headline.
    const std::uint64_t replayed = report.replayedCount;
    if (!diverged.empty()) {
        report.outcome = AuditOutcome::Failed;
        report.headline = "FAILED: " +
                          (diverged.size() == 1 ? "transaction " + indexList(diverged) + " does not"
                                                : "transactions " + indexList(diverged) + " do not") +
                          " reproduce what the tape claims — the training run recorded on this tape cannot be trusted.";
        return;
    }
    if (!trainers.empty()) {
        const ReportTransaction& first = *trainers.front();
        report.outcome = AuditOutcome::Failed;
        report.headline = "FAILED: transaction " + std::to_string(first.index) + ": " + std::string(unverifiableCauseText(first.cause)) +
                          (trainers.size() > 1 ? " (and " + count(trainers.size() - 1, "more transaction", "more transactions") + ")" : std::string()) +
                          "; " + std::string(trainersFailureReason(first.cause)) + " — the training run recorded on this tape cannot be trusted.";
        return;
    }
    if (!otherFailures.empty()) {
        const ReportOtherRun& first = *otherFailures.front();
        const bool altered = first.sealState == RunSealCheck::State::Altered;
        report.outcome = AuditOutcome::Failed;
        report.headline = "FAILED: replay run " + std::to_string(first.id) + " of this tape found " +
                          faultText(altered ? first.finding->diverged : first.diverged, altered ? first.finding->trainersFailures : first.trainersFailures) +
                          (altered ? " (its rows were altered since; its seal still says so)" : "") +
                          " — the training run recorded on this tape cannot be trusted.";
        return;
    }
    if (!report.vanishedFailures.empty()) {
        report.outcome = AuditOutcome::Failed;
        report.headline = "FAILED: replay run " + std::to_string(report.vanishedFailures.front().runId) +
                          " of this tape had found the tape at fault, as run " + std::to_string(report.runId) + "'s seal records, and is now " +
                          report.vanishedFailures.front().now + " — the training run recorded on this tape cannot be trusted.";
        return;
    }
    if (report.runLink == TapeLinkStatus::Broken) {
        report.outcome = AuditOutcome::Failed;
        report.headline = "FAILED: this tape claims to continue tape " + std::to_string(report.runLinkPreviousTape) +
                          " of the case, but " + report.runLinkProblem +
                          " — the training run recorded on these tapes cannot be trusted.";
        return;
    }
    if (!otherAltered.empty()) {
        report.outcome = AuditOutcome::NotVouched;
        report.headline = "NOT VOUCHED: replay run " + std::to_string(otherAltered.front()->id) +
                          " of this tape was altered after it was sealed, so what it found is unknown; this report neither confirms nor "
                          "refutes the tape while the case holds altered results. Replay it again in a fresh case.";
        return;
    }
    if (implausibleSampling) {
        const SamplingPlausibility& p = *report.tapeSampling;
        const CheckCountPlausibility& worse = p.update.log10LowerTail <= p.state.log10LowerTail ? p.update : p.state;
        report.outcome = AuditOutcome::Failed;
        report.headline = "FAILED: the tape carries implausibly few sampled checks (" +
                          std::string(&worse == &p.update ? "update checks " : "state checks ") + worse.text(p.transactions) +
                          "), a sign that its draws were steered to avoid checks — the training run recorded on this tape cannot be "
                          "trusted.";
        return;
    }
    if (replayed == 0) {
        report.outcome = AuditOutcome::NotVerified;
        report.headline = "NOT VERIFIED: no transaction was replayed, so this audit shows nothing about the tape.";
        return;
    }
    if (report.comparisonCount == 0) {
        // Transactions replayed with nothing to compare (a tape whose records carry no check
        // the replay can redo): nothing matched, so nothing may be said to have matched.
        const ReportTransaction* first = report.transactions.empty() ? nullptr : &report.transactions.front();
        const std::string why = !report.runProblem.empty()       ? report.runProblem
                                : first && !first->detail.empty() ? first->detail
                                                                  : "the tape's records carry nothing a replay can compare";
        report.outcome = AuditOutcome::NotVerified;
        report.headline = "NOT VERIFIED: " + count(replayed, "transaction was", "transactions were") +
                          " replayed, but nothing could be compared with the tape (" + why + "), so this audit shows nothing about it.";
        return;
    }
    if (!unverifiable.empty()) {
        report.outcome = AuditOutcome::NotVerified;
        report.headline = "NOT VERIFIED: " + std::to_string(unverifiable.size()) + " of " + std::to_string(replayed) +
                          " replayed transactions could not be checked on the auditor's machine" +
                          (report.runProblem.empty() ? std::string() : " (" + report.runProblem + ")") +
                          "; this audit neither confirms nor refutes the tape.";
        return;
    }
    std::uint64_t selectedReplayed = 0;
    for (const ReportTransaction& t : report.transactions)
        selectedReplayed += t.selected ? 1 : 0;
    const std::string which =
        selectedReplayed == replayed ? std::string()
                                     : " (" + std::to_string(selectedReplayed) + " selected, " + std::to_string(replayed - selectedReplayed) +
                                           " more replayed on the way to them)";
    std::string reproduced =
        report.exact == replayed
            ? std::string(replayed == 1 ? "the replayed transaction" : "all " + std::to_string(replayed) + " replayed transactions") + which +
                  (replayed == 1 ? " reproduces" : " reproduce") + " the tape bit for bit"
            : "all " + std::to_string(replayed) + " replayed transactions" + which + " reproduce the tape (" + std::to_string(report.exact) +
                  " bit for bit, " + std::to_string(report.withinTolerance) + " within the rounding tolerance " + report.tolerance + ")";
    if (!finished) {
        report.outcome = AuditOutcome::Incomplete;
        report.headline = "INCOMPLETE: the replay " + std::string(report.runStatus == RunStatus::Stopped ? runStatusSentence(RunStatus::Stopped) : "did not finish") + "; " +
                          reproduced + ", but the selected audit was not completed.";
        return;
    }
    if (!sealed) {
        report.outcome = AuditOutcome::IncompleteTape;
        report.headline = "INCOMPLETE TAPE: " + reproduced + ", but the tape is incomplete, so nothing is proven beyond " +
                          lastTransactionText(report) + ".";
        return;
    }
    if (report.runLink == TapeLinkStatus::PreviousMissing) {
        report.outcome = AuditOutcome::IncompleteRun;
        report.headline = "INCOMPLETE RUN: " + reproduced + ", but this tape continues a tape the case does not hold, so the state it "
                          "starts from is unchecked; ingest that tape to check the link.";
        return;
    }
    // PASSED is bit for bit; a pass that rests on a tolerance, envelope, calibration or
    // excuse gets the weaker word and names the bound it used.
    if (report.exact == replayed) {
        report.outcome = AuditOutcome::Passed;
        report.headline = "PASSED: " + reproduced + ".";
        return;
    }
    report.outcome = AuditOutcome::ConsistentWithinRounding;
    report.headline = "CONSISTENT WITHIN ROUNDING: " + reproduced + roundingBoundText(report) +
                      "; only a replay that reproduces every transaction bit for bit (in the recording environment) PASSES.";
}

}  // namespace zkdv::report_detail
