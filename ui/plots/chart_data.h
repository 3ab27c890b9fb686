#pragma once
// What the chart panel reads from a case off the GUI thread, ready to hand to the charts.

#include <limits>

#include <QSharedPointer>
#include <QString>
#include <QStringList>
#include <QVector>

#include <qcustomplot.h>

#include "zkdv/store/transaction_series.h"

namespace zkdv {
class ProgressSink;
}

namespace zkdv::ui {

struct ChartData {
    enum Part { Series = 1, Verdicts = 2 };

    int parts = 0;  // what was read
    QString problem;  // why reading failed (empty: it did not)

    // Series: the tape's transactions.
    QSharedPointer<QCPGraphDataContainer> loss;
    QStringList parameterNames;
    int parameterCount = 0;
    QVector<QSharedPointer<QCPGraphDataContainer>> updateNorms;
    // Every option the tape schedules, group by group ("lr", or "lr, group 1" with several
    // groups), each with its value per transaction; empty for a tape without a schedule.
    QStringList scheduledNames;
    QVector<QSharedPointer<QCPGraphDataContainer>> scheduledValues;

    // Verdicts: the run's (runId 0: the tape has none; TransactionTable::kEveryRun: per
    // transaction, the newest run's, each point naming its run).
    qint64 runId = 0;
    std::vector<VerdictPoint> verdicts;
    UlpHistogram runHistogram{};
    // The run's tolerance (NaN: unknown), drawn on the divergence chart.
    double ulpTolerance = std::numeric_limits<double>::quiet_NaN();
    double relativeTolerance = std::numeric_limits<double>::quiet_NaN();

    // Opens `casePath` read-only and reads `parts` of `tapeId` (and of run `runId`, 0 for the
    // newest, kEveryRun for every run). Reports failures in `problem`, except OperationCancelled, which it throws.
    static ChartData read(const QString& casePath, qint64 tapeId, qint64 runId, int parts, ProgressSink* progress);

    // Norms of more parameters than this are not read (the chart says so).
    static constexpr int kMaxParameters = 16;
};

}  // namespace zkdv::ui
