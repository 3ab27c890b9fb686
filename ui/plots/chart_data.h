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

// A replay run of the tape, as the charts name it ("Run #3 (cpu)") and offer it for comparison.
struct ChartRun {
    qint64 id = 0;
    QString device;
    QString status;  // runStatusName: "finished", "stopped", …

    QString name() const;   // "Run #3 (cpu)"
    QString label() const;  // "Run #3 · cpu · finished"
};

struct ChartData {
    enum Part { Series = 1, Verdicts = 2, Comparison = 4 };

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
    // The tape, as exported images name it: its file name, and its file SHA-256 when the
    // case holds one, else its chain head (hex).
    QString tapeName;
    QString tapeDigest;
    bool tapeDigestIsFileSha256 = false;

    // Verdicts: the run's (runId 0: the tape has none; TransactionTable::kEveryRun: per
    // transaction, the newest run's, each point naming its run).
    qint64 runId = 0;
    std::vector<VerdictPoint> verdicts;
    UlpHistogram runHistogram{};
    // The run's tolerance (NaN: unknown), drawn on the divergence chart.
    double ulpTolerance = std::numeric_limits<double>::quiet_NaN();
    double relativeTolerance = std::numeric_limits<double>::quiet_NaN();

    // Verdicts and Comparison: every run of the tape, newest first (runsRead: they were read).
    bool runsRead = false;
    QVector<ChartRun> runs;

    // Comparison: the verdicts and whole-run histogram of a second run of the same tape,
    // drawn over the first. A run that is gone or of another tape is not read: it says so
    // in comparisonProblem (the other parts are still read).
    qint64 comparisonRunId = 0;
    std::vector<VerdictPoint> comparisonVerdicts;
    UlpHistogram comparisonHistogram{};
    QString comparisonProblem;

    // Opens `casePath` read-only and reads `parts` of `tapeId` (and of run `runId`, 0 for the
    // newest, kEveryRun for every run; and of run `comparisonRunId` for Comparison). Reports
    // failures in `problem`, except OperationCancelled, which it throws.
    static ChartData read(const QString& casePath, qint64 tapeId, qint64 runId, int parts, ProgressSink* progress,
                          qint64 comparisonRunId = 0);

    // Norms of more parameters than this are not read (the chart says so).
    static constexpr int kMaxParameters = 16;
};

}  // namespace zkdv::ui
