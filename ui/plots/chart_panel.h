#pragma once
// The workstation's charts of one tape of a case, as tabs: the tape over its transactions,
// the run's divergence, and the selected transaction's tensors, optimizer state and ULP
// histogram. A second run of the same tape may be drawn over the shown one (the comparison box,
// in the tab bar's corner). Reads the case off the GUI thread; refreshes in tiers, coalesced
// by one timer. Tells its charts' tools the tape, runs and case their exported images name.

#include <memory>
#include <optional>
#include <vector>

#include <QTabWidget>
#include <QTimer>

#include "plots/chart_data.h"
#include "zkdv/audit/divergence.h"
#include "zkdv/store/transaction_series.h"

class QComboBox;
class QThread;
class QCustomPlot;

namespace zkdv {
class CaseStore;
class Database;
}

namespace zkdv::ui {

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
    // A second run of the tape, drawn over the shown run on the divergence chart and beside it
    // on the ULP histogram; 0: none. A run of another tape, or one no longer in the case, is
    // refused: problem() says why and the comparison is cleared. The shown run itself adds
    // nothing. A new case or tape clears it.
    void setComparisonRun(qint64 runId);
    // Re-reads the verdicts (replay results arriving): cheap, coalesced with a timer.
    void refresh();
    // Highlights the transaction and fills the per-transaction charts.
    void selectTransaction(quint64 index);
    // Back to no selection: the histogram shows the whole run again.
    void clearSelection();

    QString casePath() const { return casePath_; }
    qint64 tapeId() const { return tapeId_; }
    qint64 runId() const { return runId_; }  // the run shown (0: none)
    qint64 comparisonRun() const { return comparisonRun_; }  // as set (0: none)
    // The comparison run's verdicts are read and drawn (it is not the run shown).
    bool isComparing() const;
    // "Run #3 (cpu)"; "All runs" for TransactionTable::kEveryRun; empty for 0.
    QString runName(qint64 runId) const;
    QComboBox* comparisonBox() const { return compare_; }
    std::optional<quint64> selectedTransaction() const { return selected_; }
    bool isLoading() const;

    int lossPointCount() const;
    int verdictMarkerCount() const;
    int divergencePointCount() const;
    int comparisonPointCount() const;  // the comparison run's points on the divergence chart
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
    enum Tier : int { Replot = 1, Recalculate = 2, RereadComparison = 4, RereadVerdicts = 8, RereadSeries = 16 };
    struct Read;

    void schedule(int tiers, int delayMs);
    void drain();
    void startRead(int parts);
    void finishRead(QThread* thread);
    void apply(quint64 sequence, const ChartData& data);
    void fillTransactionCharts();
    void showComparison();
    void fillComparisonChoices();
    void updateCaptions();
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
    QComboBox* compare_ = nullptr;

    QTimer timer_;
    int pendingTiers_ = 0;
    int staleParts_ = 0;  // ChartData parts asked for while a read of them was in flight

    QString casePath_;
    qint64 tapeId_ = 0;
    qint64 requestedRun_ = 0;
    qint64 runId_ = 0;
    std::unique_ptr<CaseStore> case_;  // GUI thread: the selected transaction's comparisons
    Database* db_ = nullptr;
    std::optional<quint64> selected_;
    UlpHistogram runHistogram_{};
    std::vector<VerdictPoint> verdicts_;  // as applied, by index: which run each result is from
    QVector<ChartRun> runs_;              // the tape's, newest first, as last read
    QString tapeName_;
    QString tapeDigest_;
    bool tapeDigestIsFileSha256_ = false;

    qint64 comparisonRun_ = 0;
    qint64 comparisonHeld_ = 0;  // the run whose verdicts and histogram are held below
    std::vector<VerdictPoint> comparisonVerdicts_;
    UlpHistogram comparisonHistogram_{};

    quint64 generation_ = 0;    // bumped by setCase: reads of an earlier case are dropped
    quint64 readSequence_ = 0;  // reads started
    quint64 appliedVerdicts_ = 0;
    quint64 appliedComparison_ = 0;
    std::vector<std::unique_ptr<Read>> reads_;
};

}  // namespace zkdv::ui
