#pragma once
// What a scanned tape holds, in the words zkdv-audit (verify, info, ingest) and the
// workstation both print.

#include <string>

namespace zkdv {

struct TapeSummary;

// "sealed, 120 transactions, 11 snapshots, 134 records".
std::string tapeCountsText(const TapeSummary& summary);

}  // namespace zkdv
