#include "zkdv/workflow/tape_summary_text.h"

#include "zkdv/tape/tape_scanner.h"

namespace zkdv {

std::string tapeCountsText(const TapeSummary& summary)
{
    return std::string(tapeStatusName(summary.status)) + ", " + std::to_string(summary.transactionCount) + " transactions, " +
           std::to_string(summary.snapshotCount) + " snapshots, " + std::to_string(summary.recordCount) + " records";
}

std::string signatureText(SignatureTrust trust, std::string_view keyId)
{
    // The first 8 hex digits tell keys apart at a glance; the whole id is a tooltip away.
    const std::string shortId = std::string(keyId.substr(0, 8)) + (keyId.size() > 8 ? "…" : "");
    switch (trust) {
    case SignatureTrust::Trusted: return "Signed by trusted key " + shortId;
    case SignatureTrust::UnknownKey: return "Signed by an unknown key " + shortId;
    case SignatureTrust::UnsignedExpected: return "Unsigned, though your trainer keyring expects a signature";
    case SignatureTrust::Unsigned: break;
    }
    return "Unsigned";
}

}  // namespace zkdv
