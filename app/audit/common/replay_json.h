#pragma once
// JSON for replay results, shared by `replay --json` and `info CASE --json`.

#include <nlohmann/json.hpp>

#include "zkdv/replay/replay_runner.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/run_seal.h"

namespace zkdv::cli {

nlohmann::json comparisonJson(const TensorComparison& comparison);
nlohmann::json outcomeJson(const TransactionOutcome& outcome);
nlohmann::json replaySummaryJson(const ReplaySummary& summary);
nlohmann::json storedRunJson(const StoredReplayRun& run);
nlohmann::json runSealJson(const RunSealCheck& seal);

}  // namespace zkdv::cli
