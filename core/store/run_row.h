#pragma once
// The one INSERT of a replay run's row (store-internal): a run a replay begins
// (ReplayStore::beginRun) and a run merged from shards (insertMergedRun) store the request's
// columns the same way, and differ only in the facts below.

#include <cstdint>
#include <optional>
#include <string>

#include "zkdv/store/replay_store.h"
#include "zkdv/store/run_owner.h"

namespace zkdv {

class Database;

struct RunRowFacts {
    std::string status;                     // as stored: "running", "finished", …
    std::string startedAt;
    std::optional<std::string> finishedAt;  // nullopt: NULL
    std::optional<std::string> problem;     // nullopt: NULL
    std::optional<RunOwner> owner;          // the process storing the run's results, while it runs
    std::optional<std::int64_t> shardIndex, shardCount;
    std::optional<std::int64_t> plannedAuditId;
};

// Inserts the row of `info` with `facts` inside the caller's write transaction; returns its id.
std::int64_t insertRunRow(Database& db, const ReplayRunInfo& info, const RunRowFacts& facts);

}  // namespace zkdv
