#pragma once
// How far each replayed transaction of a run diverged: its worst comparison's max ULP
// distance (left, log) and relative L2 error (right, log). One point per verdict; an
// unverifiable transaction without a measured difference has a point with no value (a gap).
// A second run of the same tape may be drawn over the first (other colours, hollow markers),
// the legend then naming both runs.

#include <optional>
#include <utility>
#include <vector>

#include "plots/transaction_plot.h"

#include "zkdv/store/transaction_series.h"

namespace zkdv::ui {

class DivergenceChart : public TransactionPlot {
    Q_OBJECT

public:
    explicit DivergenceChart(QWidget* parent = nullptr);

    void setVerdicts(const std::vector<VerdictPoint>& verdicts);
    // The shown run as the legend names it while a comparison is drawn ("Run #5 (cuda:0)").
    void setRunName(const QString& name);
    // A second run's verdicts, drawn over the first; `name` names it in the legend and the
    // tooltips ("Run #3 (cpu)"). An empty name: no comparison (the graphs leave the legend).
    void setComparison(const std::vector<VerdictPoint>& verdicts, const QString& name);
    void clearComparison() { setComparison({}, QString()); }
    // The tape's transactions span [0, count): the chart's key range when it has points.
    void setTransactionCount(quint64 count);
    void setSelectedTransaction(std::optional<quint64> index);
    // The run's tolerance, drawn as a dashed line on each axis (none where it is 0: a run
    // that accepts only exact results, or NaN: unknown).
    void setTolerance(double maxUlp, double relativeL2);
    void clear();

    int pointCount() const { return maxUlp_->data()->size(); }
    bool hasComparison() const { return !comparisonName_.isEmpty(); }
    int comparisonPointCount() const { return comparisonMaxUlp_->data()->size(); }
    QCPItemStraightLine* ulpToleranceLine() const { return ulpTolerance_; }
    QCPItemStraightLine* relativeToleranceLine() const { return relativeTolerance_; }
    QCPGraph* maxUlpGraph() const { return maxUlp_; }
    QCPGraph* relativeL2Graph() const { return relativeL2_; }
    QCPGraph* comparisonMaxUlpGraph() const { return comparisonMaxUlp_; }
    QCPGraph* comparisonRelativeL2Graph() const { return comparisonRelativeL2_; }
    // The replayed transaction whose point lies within a few pixels of `pos`, if any.
    std::optional<quint64> transactionAt(const QPointF& pos) const override;

protected:
    QString tooltipFor(quint64 index) const override;

private:
    void rescale();
    void nameGraphs();

    QCPGraph* maxUlp_ = nullptr;
    QCPGraph* relativeL2_ = nullptr;
    QCPGraph* comparisonMaxUlp_ = nullptr;
    QCPGraph* comparisonRelativeL2_ = nullptr;
    QCPItemStraightLine* cursor_ = nullptr;
    QCPItemStraightLine* ulpTolerance_ = nullptr;
    QCPItemStraightLine* relativeTolerance_ = nullptr;
    QCPItemText* ulpToleranceLabel_ = nullptr;
    QCPItemText* relativeToleranceLabel_ = nullptr;
    std::vector<VerdictPoint> verdicts_;  // by index
    std::vector<VerdictPoint> comparison_;  // by index
    QString runName_;
    QString comparisonName_;
    quint64 transactionCount_ = 0;
    std::pair<double, double> tolerance_{0, 0};  // max ULP, relative L2
};

}  // namespace zkdv::ui
