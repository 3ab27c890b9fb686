#include "zkdv/workflow/replay_summary_text.h"

#include <cstdio>

namespace zkdv {

std::string replayVerdictWord(const ReplaySummary& summary)
{
    if (summary.bitForBit())
        return "passed";
    if (summary.passed())
        return "consistent within rounding";
    if (summary.status == RunStatus::Finished)
        return "FAILED";
    return "INCOMPLETE (" + std::string(runStatusName(summary.status)) + ")";
}

std::string replaySummaryHeadline(const ReplaySummary& summary)
{
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.2f", summary.seconds);
    return "replay run " + std::to_string(summary.runId) + " of tape " + std::to_string(summary.tapeId) + " on " + summary.device + ": " +
           replayVerdictWord(summary) + " — " + summary.selection + ", seed " + std::to_string(summary.seed) + " (" +
           (summary.seedSource == SeedSource::Drawn ? "drawn at audit time" : "given by the auditor") + "): " +
           std::to_string(summary.selected.size()) + " of " + std::to_string(summary.transactionCount) + " transactions selected, " +
           std::to_string(summary.replayed) + " replayed in " + seconds + " s";
}

std::vector<std::string> replaySummaryDetails(const ReplaySummary& summary)
{
    std::vector<std::string> lines;
    lines.push_back("exact " + std::to_string(summary.exact) + ", within tolerance " + std::to_string(summary.withinTolerance) + ", diverged " +
                    std::to_string(summary.diverged) + ", unverifiable " + std::to_string(summary.unverifiable) +
                    (summary.trainersFailures == 0
                         ? std::string()
                         : " (" + std::to_string(summary.trainersFailures) + " by the tape's own program or tape: the trainer's failure)"));
    if (!summary.problem.empty())
        lines.push_back(summary.problem);
    if (summary.kernelProfile.choice == KernelChoice::Recorded && !summary.kernelProfile.variables.empty())
        lines.push_back(summary.kernelProfile.note + ": " + summary.kernelProfile.describeVariables());
    if (!summary.regimeReason.empty())
        lines.push_back("judged by the " + summary.regime + " regime: " + summary.regimeReason);
    // Which envelope, and why: always across environments, and whenever a calibration was given.
    if (summary.regime == "cross-environment" || summary.envelope.calibration)
        lines.push_back("envelope (" + summary.envelope.source + "): " + summary.envelope.note);
    for (const TransactionOutcome& failure : summary.firstFailures)
        lines.push_back("transaction " + std::to_string(failure.index) + ": " + failure.detail);
    return lines;
}

}  // namespace zkdv
