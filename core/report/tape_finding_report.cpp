#include <algorithm>
#include <string>

#include "zkdv/report/audit_report.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/util/sha256.h"
#include "zkdv/util/utc_time.h"
#include "zkdv/version.h"

namespace zkdv {

namespace {

std::string lastTransactionText(std::uint64_t transactionCount)
{
    return transactionCount == 0 ? std::string("the start of training (no whole transaction was read)")
                                 : "transaction " + std::to_string(transactionCount - 1);
}

}  // namespace

ReportData buildTapeFindingReport(const TapeSummary& summary)
{
    ReportData report;
    report.generatedAt = utcNow();
    report.zkdvVersion = kVersion;
    report.tapePath = summary.path;
    report.chainHead = summary.recordCount ? toHex(summary.chainHead) : std::string();
    report.fileSha256 = summary.fileSha256 ? toHex(*summary.fileSha256) : std::string();
    report.tapeStatus = std::string(tapeStatusName(summary.status));
    report.transactionCount = summary.transactionCount;
    report.snapshotCount = summary.snapshotCount;
    report.recordCount = summary.recordCount;
    if (summary.root) {
        const RootRecord& root = *summary.root;
        report.producer = root.producerName + " " + root.producerVersion;
        report.trainedOn = root.device + ", torch " + root.torchVersion;
        report.programKind = root.programKind;
        report.optimizerContract = root.optimizerContract;
        report.parameterCount = root.parameters.size();
        for (const TensorSpec& parameter : root.parameters)
            report.parameterElements += static_cast<std::uint64_t>(std::max<std::int64_t>(parameter.elementCount(), 0));
        report.bufferCount = root.buffers.size();
    }
    // No case and no run: tapeId 0, runStatus and programCheck nullopt, and no loss series (the
    // scan keeps no transaction's loss), so the renderers leave out what was never known.
    report.programCheckDetail = "not checked: the tape was not ingested";
    report.samplingNote = "No statistical statement: no transaction was replayed.";
    const std::string where = summary.problem ? summary.problem->describe() : std::string("no detail recorded");
    switch (summary.status) {
    case TapeStatus::Corrupt:
        report.outcome = AuditOutcome::Failed;
        report.headline = "FAILED: the tape is corrupt (" + where +
                          "), so it does not truthfully record a training run; nothing after the damage can be checked.";
        report.warnings.push_back("Tampering or damage was found in the tape file itself: " + where + ". The " +
                                  std::to_string(summary.recordCount) + " records before it (" + std::to_string(summary.validBytes) +
                                  " bytes, up to " + lastTransactionText(summary.transactionCount) + ") are intact.");
        break;
    case TapeStatus::Truncated:
    case TapeStatus::Unsealed:
        report.outcome = AuditOutcome::IncompleteTape;
        report.headline = "INCOMPLETE TAPE: the tape " +
                          std::string(summary.status == TapeStatus::Truncated ? "is cut short (" + where + ")" : "was never sealed") +
                          "; its " + std::to_string(summary.recordCount) + " intact records prove nothing beyond " +
                          lastTransactionText(summary.transactionCount) + ", and it was not replayed.";
        report.warnings.push_back("This tape is incomplete: ingest its readable part (zkdv-audit ingest --allow-incomplete, or "
                                  "the workstation's Ingest Readable Part) and replay it to check what it holds.");
        break;
    case TapeStatus::Sealed:
        report.outcome = AuditOutcome::NotVerified;
        report.headline = "NOT VERIFIED: the tape reads as sealed and intact, but it was not replayed.";
        break;
    }
    return report;
}

}  // namespace zkdv
