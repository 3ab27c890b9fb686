#pragma once
// JSON and text renderings of a tape scan, shared by verify, info and ingest.

#include <string>

#include <nlohmann/json.hpp>

#include "zkdv/report/sampling_plausibility_json.h"
#include "zkdv/store/case_store.h"
#include "zkdv/tape/sampling_plausibility.h"
#include "zkdv/tape/sampling_schedule.h"
#include "zkdv/tape/tape_scanner.h"

namespace zkdv::cli {

nlohmann::json summaryJson(const TapeSummary& summary);
// The lines verify and info print about it: the counts, and the finding when there is one.
std::string samplingPlausibilityLines(const SamplingPlausibility& plausibility);
nlohmann::json rootJson(const RootRecord& root);
nlohmann::json caseTapeJson(const CaseTape& tape);
// "sealed, 2000 transactions, 167 snapshots, 2169 records" or the problem.
std::string summaryLine(const TapeSummary& summary);
// Whether the state after the last transaction is on the tape, and what its absence leaves
// unchecked (tape format 2.4 and 6.2).
std::string finalStateText(const TapeSummary& summary);

}  // namespace zkdv::cli
