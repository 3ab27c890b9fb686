#pragma once
// JSON for replay results, shared by `replay --json` and `info CASE --json`.

#include <nlohmann/json.hpp>

#include "zkdv/replay/replay_runner.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/run_seal.h"

namespace zkdv::cli {

// The version of the JSON of `replay --json` and `info CASE --json`, whose members changed
// since the first (docs/cli-json.md, "Versions").
inline constexpr int kCliJsonVersion = 2;

nlohmann::json comparisonJson(const TensorComparison& comparison);
nlohmann::json outcomeJson(const TransactionOutcome& outcome);
nlohmann::json replaySummaryJson(const ReplaySummary& summary);
nlohmann::json storedRunJson(const StoredReplayRun& run);
nlohmann::json runSealJson(const RunSealCheck& seal);

}  // namespace zkdv::cli
