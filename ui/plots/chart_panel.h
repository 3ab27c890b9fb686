#pragma once
// The workstation's charts of one tape of a case, as tabs: the tape over its transactions,
// the run's divergence, and the selected transaction's tensors, optimizer state and ULP
// histogram. Reads the case off the GUI thread; refreshes in tiers, coalesced by one timer.

#include <memory>
#include <optional>
#include <vector>

#include <QTabWidget>
#include <QTimer>

#include "zkdv/audit/divergence.h"
#include "zkdv/store/transaction_series.h"

class QThread;
class QCustomPlot;

namespace zkdv {
class CaseStore;
class Database;
}

namespace zkdv::ui {

struct ChartData;
class DivergenceChart;
class SlotDivergenceChart;
class TensorDivergenceBars;
class TransactionChart;
class UlpHistogramChart;

class ChartPanel : public QTabWidget {
    Q_OBJECT

public:
    explicit ChartPanel(QWidget* parent = nullptr);
    ~ChartPanel() override;

    // Opens its own read-only connection to the case; an empty path clears every chart.
    void setCase(const QString& casePath, qint64 tapeId);
    // The replay run whose verdicts are shown; 0: the newest run of the tape;
    // TransactionTable::kEveryRun: per transaction, the newest run that replayed it.
    void setRun(qint64 runId);
    // Re-reads the verdicts (replay results arriving): cheap, coalesced with a timer.
    void refresh();
    // Highlights the transaction and fills the per-transaction charts.
    void selectTransaction(quint64 index);
    // Back to no selection: the histogram shows the whole run again.
    void clearSelection();

    QString casePath() const { return casePath_; }
    qint64 tapeId() const { return tapeId_; }
    qint64 runId() const { return runId_; }  // the run shown (0: none)
    std::optional<quint64> selectedTransaction() const { return selected_; }
    bool isLoading() const;

    int lossPointCount() const;
    int verdictMarkerCount() const;
    int divergencePointCount() const;
    int tensorBarCount() const;
    int slotBarCount() const;
    quint64 histogramTotal() const;

    TransactionChart* lossPlot() const { return transactions_; }
    DivergenceChart* divergencePlot() const { return divergence_; }
    TensorDivergenceBars* tensorPlot() const { return tensors_; }
    SlotDivergenceChart* slotPlot() const { return slots_; }
    UlpHistogramChart* histogramPlot() const { return histogram_; }

Q_SIGNALS:
    // The user clicked a point of a transaction.
    void transactionClicked(quint64 index);
    // Every read asked for so far has been applied to the charts.
    void loaded();
    // Reading the case failed (the charts keep what they had).
    void problem(const QString& message);

private:
    // Refresh tiers, cheapest first, drained together by one timer.
    enum Tier : int { Replot = 1, Recalculate = 2, RereadVerdicts = 4, RereadSeries = 8 };
    struct Read;

    void schedule(int tiers, int delayMs);
    void drain();
    void startRead(int parts);
    void finishRead(QThread* thread);
    void apply(quint64 sequence, const ChartData& data);
    void fillTransactionCharts();
    void replotVisible();
    void cancelReads();
    void clearCharts();
    qint64 resolveRun();
    void onChartClicked(quint64 index);

    TransactionChart* transactions_ = nullptr;
    DivergenceChart* divergence_ = nullptr;
    TensorDivergenceBars* tensors_ = nullptr;
    SlotDivergenceChart* slots_ = nullptr;
    UlpHistogramChart* histogram_ = nullptr;

    QTimer timer_;
    int pendingTiers_ = 0;
    bool verdictsStale_ = false;  // asked for while a verdict read was in flight

    QString casePath_;
    qint64 tapeId_ = 0;
    qint64 requestedRun_ = 0;
    qint64 runId_ = 0;
    std::unique_ptr<CaseStore> case_;  // GUI thread: the selected transaction's comparisons
    Database* db_ = nullptr;
    std::optional<quint64> selected_;
    UlpHistogram runHistogram_{};
    std::vector<VerdictPoint> verdicts_;  // as applied, by index: which run each result is from

    quint64 generation_ = 0;    // bumped by setCase: reads of an earlier case are dropped
    quint64 readSequence_ = 0;  // reads started
    quint64 appliedVerdicts_ = 0;
    std::vector<std::unique_ptr<Read>> reads_;
};

}  // namespace zkdv::ui
