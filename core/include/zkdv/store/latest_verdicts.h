#pragma once
// Every replay run of a tape seen at once: per transaction, the result of the newest run that
// replayed it, how many runs replayed it and whether they disagree. A later, partial run so
// never hides what an earlier run found for the transactions it did not replay.

#include <cstdint>
#include <string>
#include <vector>

#include "zkdv/store/transaction_series.h"

namespace zkdv {

class Database;

// The newest result of each replayed transaction of a tape, by transaction index.
std::vector<VerdictPoint> loadLatestVerdictPoints(Database& db, std::int64_t tapeId);
// The ULP histograms of the comparisons behind those results, summed bin by bin.
UlpHistogram loadLatestUlpHistogram(Database& db, std::int64_t tapeId, ProgressSink* progress = nullptr);
// The tolerance every run of the tape used, or "" when they used different ones (or none ran).
std::string commonRunTolerance(Database& db, std::int64_t tapeId);

// The same results as a temporary table of this connection, for SQL that joins them with the
// transactions (the workstation's table and its filters). SQLite's temp schema belongs to the
// connection, so a read-only case holds one too. Columns: those of `verdicts` (run_id is the
// run the result comes from) plus `run_count`, `disagree` (0/1) and `view`, which is
// kViewId in every row so that a query can select it the way it selects one run's rows.
// Not thread-safe, like the connection; throws DatabaseError.
class LatestVerdictTable {
public:
    static constexpr std::int64_t kViewId = -1;

    LatestVerdictTable(Database& db, std::int64_t tapeId);
    ~LatestVerdictTable();
    LatestVerdictTable(const LatestVerdictTable&) = delete;
    LatestVerdictTable& operator=(const LatestVerdictTable&) = delete;

    const std::string& name() const { return name_; }  // "temp.zkdv_latest_verdicts_N"
    // Rebuilds the table when a run of the tape was added or gained verdicts since the last
    // call; returns whether it did.
    bool refresh();
    bool empty() const { return empty_; }

private:
    std::string runSignature();

    Database& db_;
    std::int64_t tapeId_;
    std::string name_;
    std::string signature_;
    bool built_ = false;
    bool empty_ = true;
};

}  // namespace zkdv
