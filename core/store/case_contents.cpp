#include "zkdv/store/case_contents.h"

#include <limits>

#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/tape/root_record.h"

namespace zkdv {

namespace {

// A metric column: SQLite stores NaN as NULL, so NULL reads back as NaN.
double realOrNan(const Statement& row, int column)
{
    return row.isNull(column) ? std::numeric_limits<double>::quiet_NaN() : row.real(column);
}

}  // namespace

std::vector<StoredTensor> loadModelLayout(Database& db, std::int64_t tapeId)
{
    Statement rows = db.prepare("SELECT kind, name, dtype, shape FROM tensors WHERE tape_id = ?1 ORDER BY kind = 'buffer', position");
    rows.bind(1, tapeId);
    std::vector<StoredTensor> layout;
    while (rows.step())
        layout.push_back({rows.text(0) != "parameter", rows.text(1), rows.text(2), rows.text(3)});
    return layout;
}

std::vector<std::string> loadOptimizerGroupOptions(Database& db, std::int64_t tapeId)
{
    Statement groups = db.prepare("SELECT options FROM optimizer_groups WHERE tape_id = ?1 ORDER BY group_index");
    groups.bind(1, tapeId);
    std::vector<std::string> options;
    while (groups.step())
        options.push_back(groups.text(0));
    return options;
}

RecordedLosses loadRecordedLosses(Database& db, std::int64_t tapeId)
{
    Statement rows = db.prepare("SELECT idx, loss FROM transactions WHERE tape_id = ?1 AND loss IS NOT NULL ORDER BY idx");
    rows.bind(1, tapeId);
    RecordedLosses series;
    while (rows.step()) {
        series.indexes.push_back(static_cast<std::uint64_t>(rows.int64(0)));
        series.losses.push_back(rows.real(1));
    }
    return series;
}

SampledCheckCounts countSampledChecks(Database& db)
{
    SampledCheckCounts counts;
    counts.withDeltas = db.queryInt64("SELECT count(*) FROM transactions WHERE has_deltas").value_or(0);
    counts.withStateDigest = db.queryInt64("SELECT count(*) FROM transactions WHERE has_state_digest").value_or(0);
    return counts;
}

std::optional<SamplingPlausibility> tapeSamplingPlausibility(Database& db, const CaseTape& tape)
{
    RootRecord root;
    try {
        root = RootRecord::parse(ByteSpan(std::string_view(tape.rootJson)));
    } catch (const Error&) {
        return std::nullopt;
    }
    Statement counts = db.prepare(
        "SELECT count(*), coalesce(sum(has_deltas != 0), 0), coalesce(sum(has_state_digest != 0), 0) FROM transactions WHERE tape_id = ?1");
    counts.bind(1, tape.id);
    DrawnCheckCounts drawn;
    if (counts.step()) {
        drawn.transactions = static_cast<std::uint64_t>(counts.int64(0));
        drawn.updateChecks = static_cast<std::uint64_t>(counts.int64(1));
        drawn.stateChecks = static_cast<std::uint64_t>(counts.int64(2));
    }
    return samplingPlausibility(root.updateCheckProbability, root.stateCheckProbability, drawn);
}

std::vector<RunTransaction> loadRunTransactions(Database& db, std::int64_t tapeId, std::int64_t runId)
{
    Statement rows = db.prepare(
        "SELECT v.idx, coalesce(v.segment, 0), coalesce(v.selected, 1), v.verdict, coalesce(v.detail, ''), t.loss, t.lr,"
        " t.update_norm, coalesce(v.replay_ns, 0), coalesce(v.cause, '')"
        " FROM verdicts v LEFT JOIN transactions t ON t.tape_id = ?1 AND t.idx = v.idx WHERE v.run_id = ?2 ORDER BY v.idx");
    rows.bind(1, tapeId).bind(2, runId);
    std::vector<RunTransaction> transactions;
    while (rows.step()) {
        RunTransaction t;
        t.index = static_cast<std::uint64_t>(rows.int64(0));
        t.segment = static_cast<std::uint64_t>(rows.int64(1));
        t.selected = rows.int64(2) != 0;
        t.verdict = verdictOrUnverifiable(rows.text(3));
        t.detail = rows.text(4);
        t.loss = realOrNan(rows, 5);
        if (!rows.isNull(6))
            t.recordedLearningRate = rows.real(6);
        t.updateNorm = realOrNan(rows, 7);
        t.replayNs = static_cast<std::uint64_t>(rows.int64(8));
        if (t.verdict == Verdict::Unverifiable)
            t.cause = unverifiableCauseOrEnvironment(rows.text(9));
        transactions.push_back(std::move(t));
    }
    return transactions;
}

}  // namespace zkdv
