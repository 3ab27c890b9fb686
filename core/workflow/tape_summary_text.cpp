#include "zkdv/workflow/tape_summary_text.h"

#include "zkdv/tape/tape_scanner.h"

namespace zkdv {

std::string tapeCountsText(const TapeSummary& summary)
{
    return std::string(tapeStatusName(summary.status)) + ", " + std::to_string(summary.transactionCount) + " transactions, " +
           std::to_string(summary.snapshotCount) + " snapshots, " + std::to_string(summary.recordCount) + " records";
}

}  // namespace zkdv
