#include "zkdv/store/transaction_series.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "zkdv/store/database.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/util/little_endian.h"
#include "zkdv/util/progress.h"

namespace zkdv {

namespace {

constexpr double kNotRecorded = std::numeric_limits<double>::quiet_NaN();
// Rows between progress reports and cancellation checks.
constexpr std::uint64_t kProgressStride = 65536;

void checkProgress(ProgressSink* progress, std::uint64_t done, std::uint64_t total, std::string_view phase)
{
    if (!progress)
        return;
    if (progress->cancelRequested())
        throw OperationCancelled();
    progress->report(done, total, phase);
}

// The options the tape's root schedules, from its stored root; none when the root holds no
// schedule or is not what ingest stored (a case is untrusted: a chart then shows less, it does
// not fail).
std::vector<std::string> scheduledOptionsOf(Database& db, std::int64_t tapeId)
{
    Statement root = db.prepare("SELECT root_json FROM tapes WHERE id = ?1");
    root.bind(1, tapeId);
    if (!root.step() || root.isNull(0))
        return {};
    const nlohmann::json json = nlohmann::json::parse(root.text(0), nullptr, /*allow_exceptions=*/false);
    if (!json.is_object() || !json.contains("optimizer") || !json["optimizer"].is_object())
        return {};
    const nlohmann::json& optimizer = json["optimizer"];
    if (!optimizer.contains("schedule") || !optimizer["schedule"].is_object() || !optimizer["schedule"].contains("options"))
        return {};
    const nlohmann::json& listed = optimizer["schedule"]["options"];
    if (!listed.is_array())
        return {};
    std::vector<std::string> options;
    for (const nlohmann::json& option : listed) {
        if (!option.is_string() || options.size() == 64)
            return {};
        options.push_back(option.get<std::string>());
    }
    return options;
}

}  // namespace

TransactionSeries loadTransactionSeries(Database& db, std::int64_t tapeId, std::size_t maxParameters, ProgressSink* progress)
{
    TransactionSeries series;
    Statement names = db.prepare("SELECT name FROM tensors WHERE tape_id = ?1 AND kind = 'parameter' ORDER BY position");
    names.bind(1, tapeId);
    while (names.step()) {
        ++series.parameterCount;
        if (series.parameterNames.size() < maxParameters)
            series.parameterNames.push_back(names.text(0));
    }
    const std::size_t shown = series.parameterNames.size();
    series.scheduledOptions = scheduledOptionsOf(db, tapeId);
    if (!series.scheduledOptions.empty()) {
        series.groupCount = static_cast<std::size_t>(std::clamp<std::int64_t>(
            db.queryInt64("SELECT count(*) FROM optimizer_groups WHERE tape_id = " + std::to_string(tapeId)).value_or(0), 0, 4096));
        if (series.groupCount == 0)
            series.scheduledOptions.clear();
    }
    const std::size_t scheduledValues = series.scheduledOptions.size() * series.groupCount;

    // transaction_count is what ingest found; the reservation is only a hint.
    const std::uint64_t expected = static_cast<std::uint64_t>(std::max<std::int64_t>(
        0, db.queryInt64("SELECT count(*) FROM transactions WHERE tape_id = " + std::to_string(tapeId)).value_or(0)));
    series.indexes.reserve(expected);
    series.losses.reserve(expected);
    series.updateNorms.resize(shown);
    for (std::vector<double>& norms : series.updateNorms)
        norms.reserve(expected);
    series.scheduled.resize(scheduledValues);
    for (std::vector<double>& values : series.scheduled)
        values.reserve(expected);

    // The key (tape_id, idx) orders the rows: no sort.
    Statement rows = db.prepare("SELECT idx, loss, " + std::string(shown > 0 ? "fingerprints" : "NULL") + ", " +
                                (scheduledValues > 0 ? "scheduled" : "NULL") + " FROM transactions WHERE tape_id = ?1 ORDER BY idx");
    rows.bind(1, tapeId);
    std::uint64_t done = 0;
    while (rows.step()) {
        series.indexes.push_back(static_cast<double>(rows.int64(0)));
        series.losses.push_back(rows.isNull(1) ? kNotRecorded : rows.real(1));
        if (shown > 0) {
            // fingerprints: per parameter (l2, max_abs) as native little-endian doubles.
            const ByteSpan blob = rows.isNull(2) ? ByteSpan() : rows.blob(2);
            const std::size_t pairs = std::min(shown, blob.size / (2 * sizeof(double)));
            for (std::size_t p = 0; p < pairs; ++p) {
                double l2;
                std::memcpy(&l2, blob.data + 2 * p * sizeof(double), sizeof(double));
                series.updateNorms[p].push_back(l2);
            }
            for (std::size_t p = pairs; p < shown; ++p)
                series.updateNorms[p].push_back(kNotRecorded);
        }
        if (scheduledValues > 0) {
            // scheduled: native little-endian doubles, option-major; a blob of another size
            // than the root's options and groups make is not this tape's.
            const ByteSpan blob = rows.isNull(3) ? ByteSpan() : rows.blob(3);
            const bool whole = blob.size == scheduledValues * sizeof(double);
            for (std::size_t v = 0; v < scheduledValues; ++v) {
                double value = kNotRecorded;
                if (whole)
                    std::memcpy(&value, blob.data + v * sizeof(double), sizeof(double));
                series.scheduled[v].push_back(value);
            }
        }
        if (++done % kProgressStride == 0)
            checkProgress(progress, done, expected, "reading transactions");
    }
    checkProgress(progress, done, expected, "reading transactions");
    return series;
}

std::vector<VerdictPoint> loadVerdictPoints(Database& db, std::int64_t runId)
{
    Statement rows = db.prepare(
        "SELECT idx, verdict, selected, coalesce(worst_max_ulp, 0), coalesce(worst_rel_l2, 0) FROM verdicts WHERE run_id = ?1 ORDER BY idx");
    rows.bind(1, runId);
    std::vector<VerdictPoint> points;
    while (rows.step()) {
        VerdictPoint point;
        point.index = static_cast<std::uint64_t>(rows.int64(0));
        point.runId = runId;
        point.verdict = verdictOrUnverifiable(rows.text(1));
        point.selected = rows.isNull(2) || rows.int64(2) != 0;
        point.worstMaxUlp = rows.real(3);
        point.worstRelativeL2 = rows.real(4);
        points.push_back(point);
    }
    return points;
}

std::optional<std::int64_t> newestReplayRun(Database& db, std::int64_t tapeId)
{
    Statement row = db.prepare("SELECT max(id) FROM replay_runs WHERE tape_id = ?1");
    row.bind(1, tapeId);
    if (!row.step() || row.isNull(0))
        return std::nullopt;
    return row.int64(0);
}

bool replayRunBelongsToTape(Database& db, std::int64_t runId, std::int64_t tapeId)
{
    Statement row = db.prepare("SELECT 1 FROM replay_runs WHERE id = ?1 AND tape_id = ?2");
    row.bind(1, runId).bind(2, tapeId);
    return row.step();
}

std::vector<TensorComparison> loadTransactionComparisons(Database& db, std::int64_t runId, std::uint64_t index)
{
    return ReplayStore(db).comparisons(runId, index);
}

UlpHistogram loadRunUlpHistogram(Database& db, std::int64_t runId, ProgressSink* progress)
{
    UlpHistogram total{};
    Statement rows = db.prepare("SELECT ulp_histogram FROM metrics WHERE run_id = ?1 AND ulp_histogram IS NOT NULL");
    rows.bind(1, runId);
    std::uint64_t done = 0;
    while (rows.step()) {
        addUlpHistogramBlob(total, rows.blob(0));
        if (++done % kProgressStride == 0)
            checkProgress(progress, done, 0, "reading histograms");
    }
    return total;
}

void addUlpHistogramBlob(UlpHistogram& total, ByteSpan blob)
{
    // Little-endian u64 counts, trailing empty bins omitted.
    const std::size_t bins = std::min(total.size(), blob.size / sizeof(std::uint64_t));
    for (std::size_t b = 0; b < bins; ++b)
        total[b] += readLittleEndian<std::uint64_t>(blob.data + b * sizeof(std::uint64_t));
}

UlpHistogram sumUlpHistograms(const std::vector<TensorComparison>& comparisons)
{
    UlpHistogram total{};
    for (const TensorComparison& comparison : comparisons)
        for (std::size_t b = 0; b < total.size(); ++b)
            total[b] += comparison.metrics.ulpHistogram[b];
    return total;
}

}  // namespace zkdv
