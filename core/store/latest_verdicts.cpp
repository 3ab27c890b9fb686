#include "zkdv/store/latest_verdicts.h"

#include <atomic>

#include "zkdv/store/database.h"
#include "zkdv/util/progress.h"

namespace zkdv {

namespace {

// Per replayed transaction of tape ?1, the row of the newest run (the highest id: runs are
// numbered as they start) with the number of runs that replayed it and whether any two of
// them reached different verdicts.
const char* const kLatestRows =
    "SELECT idx, run_id, verdict, detail, segment, selected, worst_tensor, worst_slot, worst_max_ulp, worst_rel_l2, replay_ns,"
    " run_count, disagree FROM ("
    " SELECT v.idx, v.run_id, v.verdict, v.detail, v.segment, v.selected, v.worst_tensor, v.worst_slot, v.worst_max_ulp,"
    " v.worst_rel_l2, v.replay_ns,"
    " row_number() OVER (PARTITION BY v.idx ORDER BY v.run_id DESC) AS newest,"
    " count(*) OVER (PARTITION BY v.idx) AS run_count,"
    " min(v.verdict) OVER (PARTITION BY v.idx) <> max(v.verdict) OVER (PARTITION BY v.idx) AS disagree"
    " FROM verdicts v JOIN replay_runs r ON r.id = v.run_id WHERE r.tape_id = ?1)"
    " WHERE newest = 1 ORDER BY idx";

std::atomic<unsigned> tableCounter{0};

}  // namespace

std::vector<VerdictPoint> loadLatestVerdictPoints(Database& db, std::int64_t tapeId)
{
    Statement rows = db.prepare(kLatestRows);
    rows.bind(1, tapeId);
    std::vector<VerdictPoint> points;
    while (rows.step()) {
        VerdictPoint point;
        point.index = static_cast<std::uint64_t>(rows.int64(0));
        point.runId = rows.int64(1);
        point.verdict = verdictOrUnverifiable(rows.text(2));
        point.selected = rows.isNull(5) || rows.int64(5) != 0;
        point.worstMaxUlp = rows.isNull(8) ? 0.0 : rows.real(8);
        point.worstRelativeL2 = rows.isNull(9) ? 0.0 : rows.real(9);
        point.runCount = static_cast<std::uint32_t>(rows.int64(11));
        point.runsDisagree = rows.int64(12) != 0;
        points.push_back(point);
    }
    return points;
}

UlpHistogram loadLatestUlpHistogram(Database& db, std::int64_t tapeId, ProgressSink* progress)
{
    // The metrics of each transaction's newest run (verdicts_by_idx finds it per row).
    Statement rows = db.prepare(
        "SELECT m.ulp_histogram FROM metrics m JOIN replay_runs r ON r.id = m.run_id"
        " WHERE r.tape_id = ?1 AND m.ulp_histogram IS NOT NULL AND m.run_id = (SELECT max(v.run_id) FROM verdicts v"
        " JOIN replay_runs w ON w.id = v.run_id WHERE w.tape_id = ?1 AND v.idx = m.idx)");
    rows.bind(1, tapeId);
    UlpHistogram total{};
    std::uint64_t done = 0;
    while (rows.step()) {
        addUlpHistogramBlob(total, rows.blob(0));
        if (++done % 4096 == 0 && progress) {
            progress->report(done, 0, "reading histograms");
            if (progress->cancelRequested())
                throw OperationCancelled();
        }
    }
    return total;
}

std::string commonRunTolerance(Database& db, std::int64_t tapeId)
{
    Statement rows = db.prepare("SELECT DISTINCT coalesce(tolerance, '') FROM replay_runs WHERE tape_id = ?1 LIMIT 2");
    rows.bind(1, tapeId);
    std::vector<std::string> seen;
    while (rows.step())
        seen.push_back(rows.text(0));
    return seen.size() == 1 ? seen.front() : std::string();
}

LatestVerdictTable::LatestVerdictTable(Database& db, std::int64_t tapeId)
    : db_(db), tapeId_(tapeId), name_("temp.zkdv_latest_verdicts_" + std::to_string(++tableCounter))
{
    db_.exec("CREATE TEMP TABLE " + name_.substr(5) +
             "(view INTEGER NOT NULL, idx INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, verdict TEXT NOT NULL, detail TEXT,"
             " segment INTEGER, selected INTEGER, worst_tensor TEXT, worst_slot TEXT, worst_max_ulp REAL, worst_rel_l2 REAL,"
             " replay_ns INTEGER, run_count INTEGER NOT NULL, disagree INTEGER NOT NULL)");
}

LatestVerdictTable::~LatestVerdictTable()
{
    try {
        db_.exec("DROP TABLE IF EXISTS " + name_);
    } catch (...) {
        // The connection is closing anyway; its temp schema goes with it.
    }
}

std::string LatestVerdictTable::runSignature()
{
    // Finished runs never change; a running one gains verdicts. Counting a run's verdicts
    // reads only its range of the verdicts key.
    Statement runs = db_.prepare(
        "SELECT r.id, (SELECT count(*) FROM verdicts v WHERE v.run_id = r.id) FROM replay_runs r WHERE r.tape_id = ?1 ORDER BY r.id");
    runs.bind(1, tapeId_);
    std::string signature;
    while (runs.step())
        signature += std::to_string(runs.int64(0)) + ':' + std::to_string(runs.int64(1)) + ' ';
    return signature;
}

bool LatestVerdictTable::refresh()
{
    std::string signature = runSignature();
    if (built_ && signature == signature_)
        return false;
    // A deferred transaction: it writes only this connection's temp schema, so it takes no
    // write lock on the case (a replay may be writing it) and works read-only.
    db_.exec("BEGIN");
    try {
        db_.exec("DELETE FROM " + name_);
        Statement fill = db_.prepare("INSERT INTO " + name_ + " SELECT " + std::to_string(kViewId) + ", * FROM (" + kLatestRows + ")");
        fill.bind(1, tapeId_).run();
        db_.exec("COMMIT");
    } catch (...) {
        try {
            db_.exec("ROLLBACK");
        } catch (...) {
        }
        throw;
    }
    empty_ = !db_.queryInt64("SELECT count(*) FROM " + name_).value_or(0);
    signature_ = std::move(signature);
    built_ = true;
    return true;
}

}  // namespace zkdv
