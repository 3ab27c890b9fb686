#include "plots/chart_data.h"

#include <cmath>

#include <QFileInfo>

#include "zkdv/audit/run_status.h"
#include "zkdv/audit/tolerance.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/latest_verdicts.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/transaction_table.h"
#include "zkdv/util/error.h"
#include "zkdv/util/progress.h"

namespace zkdv::ui {

namespace {

// Copies a series into a container the chart can share; non-positive values (a log axis
// cannot show them) become gaps when `positiveOnly`.
QSharedPointer<QCPGraphDataContainer> container(const std::vector<double>& keys, const std::vector<double>& values,
                                                bool positiveOnly)
{
    QVector<QCPGraphData> points(static_cast<qsizetype>(std::min(keys.size(), values.size())));
    for (qsizetype i = 0; i < points.size(); ++i) {
        const double value = values[static_cast<std::size_t>(i)];
        points[i] = QCPGraphData(keys[static_cast<std::size_t>(i)],
                                 positiveOnly && !(value > 0) ? std::numeric_limits<double>::quiet_NaN() : value);
    }
    auto result = QSharedPointer<QCPGraphDataContainer>::create();
    result->set(points, true);
    return result;
}

}  // namespace

QString ChartRun::name() const
{
    return device.isEmpty() ? QObject::tr("Run #%1").arg(id) : QObject::tr("Run #%1 (%2)").arg(id).arg(device);
}

QString ChartRun::label() const
{
    QStringList parts{QObject::tr("Run #%1").arg(id)};
    if (!device.isEmpty())
        parts << device;
    if (!status.isEmpty())
        parts << status;
    return parts.join(QStringLiteral(" · "));
}

ChartData ChartData::read(const QString& casePath, qint64 tapeId, qint64 runId, int parts, ProgressSink* progress,
                          qint64 comparisonRunId)
{
    ChartData data;
    try {
        // Opened as every reader opens a case (CaseStore: the schema checked first).
        CaseStore store(casePath.toStdString(), CaseStore::Access::ReadOnly);
        Database& db = store.database();
        if (parts & Series) {
            if (const std::optional<CaseTape> tape = store.tape(tapeId)) {
                data.tapeName = QFileInfo(QString::fromStdString(tape->path)).fileName();
                data.tapeDigestIsFileSha256 = !tape->fileSha256.empty();
                data.tapeDigest = QString::fromStdString(data.tapeDigestIsFileSha256 ? tape->fileSha256 : tape->chainHead);
            }
            TransactionSeries series = loadTransactionSeries(db, tapeId, kMaxParameters, progress);
            data.loss = container(series.indexes, series.losses, false);
            for (std::size_t p = 0; p < series.parameterNames.size(); ++p) {
                data.parameterNames << QString::fromStdString(series.parameterNames[p]);
                data.updateNorms << container(series.indexes, series.updateNorms[p], true);
                // Drop each parameter's doubles once copied: keeps the peak near one copy.
                std::vector<double>().swap(series.updateNorms[p]);
            }
            data.parameterCount = static_cast<int>(series.parameterCount);
            for (std::size_t o = 0; o < series.scheduledOptions.size(); ++o)
                for (std::size_t g = 0; g < series.groupCount; ++g) {
                    const QString option = QString::fromStdString(series.scheduledOptions[o]);
                    data.scheduledNames << (series.groupCount == 1 ? option : QStringLiteral("%1, group %2").arg(option).arg(g));
                    data.scheduledValues << container(series.indexes, series.scheduled[o * series.groupCount + g], false);
                }
            data.parts |= Series;
        }
        std::vector<StoredReplayRun> runs;
        if (parts & (Verdicts | Comparison)) {
            runs = ReplayStore(db).runs(tapeId);
            for (const StoredReplayRun& run : runs)
                data.runs.append(ChartRun{run.id, QString::fromStdString(run.device), QString::fromStdString(std::string(runStatusName(run.status)))});
            data.runsRead = true;
        }
        if ((parts & Verdicts) && runId == TransactionTable::kEveryRun) {
            data.runId = runId;
            data.verdicts = loadLatestVerdictPoints(db, tapeId);
            data.runHistogram = loadLatestUlpHistogram(db, tapeId, progress);
            // Tolerance lines only when every run drew the same ones.
            const std::string tolerance = commonRunTolerance(db, tapeId);
            if (!tolerance.empty()) {
                try {
                    const Tolerance parsed = Tolerance::parse(tolerance);
                    data.ulpTolerance = parsed.maxUlp;
                    data.relativeTolerance = parsed.relativeL2;
                } catch (const ToleranceError&) {
                }
            }
            data.parts |= Verdicts;
        } else if (parts & Verdicts) {
            if (runId != 0 && !replayRunBelongsToTape(db, runId, tapeId))
                throw Error("replay run " + std::to_string(runId) + " is not a run of tape " + std::to_string(tapeId));
            if (runId == 0)
                runId = newestReplayRun(db, tapeId).value_or(0);
            data.runId = runId;
            if (runId != 0) {
                data.verdicts = loadVerdictPoints(db, runId);
                data.runHistogram = loadRunUlpHistogram(db, runId, progress);
                for (const StoredReplayRun& run : runs)
                    if (run.id == runId) {
                        try {
                            const Tolerance tolerance = Tolerance::parse(run.tolerance);
                            data.ulpTolerance = tolerance.maxUlp;
                            data.relativeTolerance = tolerance.relativeL2;
                        } catch (const ToleranceError&) {
                            // A tolerance this build cannot read: no lines, rather than wrong ones.
                        }
                    }
            }
            data.parts |= Verdicts;
        }
        if (parts & Comparison) {
            data.comparisonRunId = comparisonRunId;
            if (comparisonRunId > 0 && !replayRunBelongsToTape(db, comparisonRunId, tapeId)) {
                data.comparisonProblem = QObject::tr("replay run %1 is not a run of tape %2 (removed, or of another tape)")
                                             .arg(comparisonRunId)
                                             .arg(tapeId);
            } else if (comparisonRunId > 0) {
                data.comparisonVerdicts = loadVerdictPoints(db, comparisonRunId);
                data.comparisonHistogram = loadRunUlpHistogram(db, comparisonRunId, progress);
            }
            data.parts |= Comparison;
        }
    } catch (const OperationCancelled&) {
        throw;
    } catch (const std::exception& error) {
        data.problem = QString::fromStdString(error.what());
    }
    return data;
}

}  // namespace zkdv::ui
