#pragma once
// What the workstation's charts show, read from a case: a tape's loss, per-parameter update
// norms and scheduled options over its transactions, and a replay run's verdicts and
// divergence. No Qt.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/audit/divergence.h"
#include "zkdv/audit/replay_outcome.h"
#include "zkdv/audit/verdict.h"
#include "zkdv/util/byte_span.h"

namespace zkdv {

class Database;
class ProgressSink;

// Every transaction of one tape in index order. Keys and values are doubles because that is
// what a chart plots; a loss the tape did not record is NaN.
struct TransactionSeries {
    std::vector<double> indexes;
    std::vector<double> losses;
    // Parameters in model-layout order (`tensors`, kind 'parameter', by position); only the
    // first `maxParameters` asked for when the model has more (see parameterCount).
    std::vector<std::string> parameterNames;
    std::size_t parameterCount = 0;  // parameters the model has
    // updateNorms[p][i]: L2 norm of parameter p's update in transaction indexes[i]
    // (from `transactions.fingerprints`; NaN when the record carries none for it).
    std::vector<std::vector<double>> updateNorms;
    // The options the tape's root schedules (optimizer.schedule.options, in its order; empty
    // for a tape without a schedule) and its optimizer's group count. scheduled[o * groupCount
    // + g][i]: option o's value in group g at transaction indexes[i] (from
    // `transactions.scheduled`; NaN where the case holds none, as for a transaction ingested
    // before schema version 11).
    std::vector<std::string> scheduledOptions;
    std::size_t groupCount = 0;
    std::vector<std::vector<double>> scheduled;
};

// One replayed transaction of a run, as the `verdicts` table holds it.
struct VerdictPoint {
    std::uint64_t index = 0;
    std::int64_t runId = 0;        // the run the result comes from
    Verdict verdict = Verdict::Unverifiable;
    bool selected = true;          // false: replayed only as the prefix of a selected one
    double worstMaxUlp = 0.0;      // of the comparison with the worst verdict (0 when none)
    double worstRelativeL2 = 0.0;
    // Of every run of the tape (loadLatestVerdictPoints): how many replayed the transaction
    // and whether their verdicts differ; 1 and false for one run's points.
    std::uint32_t runCount = 1;
    bool runsDisagree = false;
};

// Reads the series of `tapeId` in one query over `transactions`. Update norms are read for
// at most `maxParameters` parameters. `progress` (optional) hears transactions read and may
// cancel (OperationCancelled). Throws DatabaseError.
TransactionSeries loadTransactionSeries(Database& db, std::int64_t tapeId, std::size_t maxParameters,
                                        ProgressSink* progress = nullptr);

// The verdicts of one run, ordered by transaction index.
std::vector<VerdictPoint> loadVerdictPoints(Database& db, std::int64_t runId);

// The newest replay run of a tape, if it has one.
std::optional<std::int64_t> newestReplayRun(Database& db, std::int64_t tapeId);

// True when `runId` is a run of `tapeId`.
bool replayRunBelongsToTape(Database& db, std::int64_t runId, std::int64_t tapeId);

// Every comparison a run made of one transaction (ReplayStore::comparisons).
std::vector<TensorComparison> loadTransactionComparisons(Database& db, std::int64_t runId, std::uint64_t index);

// The ULP histograms of every comparison of a run, summed bin by bin.
UlpHistogram loadRunUlpHistogram(Database& db, std::int64_t runId, ProgressSink* progress = nullptr);

// Adds a stored histogram (metrics.ulp_histogram: little-endian u64 counts) to `total`.
void addUlpHistogramBlob(UlpHistogram& total, ByteSpan blob);

// The histograms of `comparisons`, summed bin by bin.
UlpHistogram sumUlpHistograms(const std::vector<TensorComparison>& comparisons);

}  // namespace zkdv
