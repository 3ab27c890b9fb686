#pragma once
// The tape over its transactions: loss on top, per-parameter update norms (log) below, the
// options a schedule moves (learning rates, cycled momentum) per group at the bottom when the
// tape schedules any, and the replayed transactions marked on the loss by verdict.

#include <array>
#include <optional>
#include <vector>

#include "plots/transaction_plot.h"

#include "zkdv/store/transaction_series.h"

namespace zkdv::ui {

class TransactionChart : public TransactionPlot {
    Q_OBJECT

public:
    explicit TransactionChart(QWidget* parent = nullptr);

    // Shares the containers (no copy). `parameterCount` is how many parameters the model
    // has, when `updateNorms` holds only the first of them.
    void setSeries(QSharedPointer<QCPGraphDataContainer> loss, const QStringList& parameterNames, int parameterCount,
                   const QVector<QSharedPointer<QCPGraphDataContainer>>& updateNorms);
    // One graph per scheduled option and group, in a rectangle of their own that is there only
    // while there are some (`names` and `values` pair up).
    void setScheduledOptions(const QStringList& names, const QVector<QSharedPointer<QCPGraphDataContainer>>& values);
    // One marker per verdict, on the loss of its transaction.
    void setVerdicts(const std::vector<VerdictPoint>& verdicts);
    void setSelectedTransaction(std::optional<quint64> index);
    void clear();
    // Loss on a log or a linear axis (the choice is kept in QSettings).
    void setLogarithmicLoss(bool logarithmic);
    bool logarithmicLoss() const;

    int lossPointCount() const;
    int verdictMarkerCount() const;
    QCPGraph* lossGraph() const { return loss_; }
    QCPGraph* verdictGraph(Verdict verdict) const { return markers_[static_cast<std::size_t>(verdict)]; }
    QCPAxisRect* lossRect() const { return axisRect(0); }
    QCPAxisRect* normRect() const { return normRect_; }
    QCPAxisRect* scheduleRect() const { return scheduleRect_; }  // null while nothing is scheduled
    const QVector<QCPGraph*>& scheduledGraphs() const { return scheduled_; }
    // The transaction under `pos` (a verdict marker within a few pixels, else the loss point
    // nearest in key), if any.
    std::optional<quint64> transactionAt(const QPointF& pos) const override;

protected:
    QString tooltipFor(quint64 index) const override;

private:
    void rebuildMarkers();
    const VerdictPoint* verdictOf(quint64 index) const;

    void removeScheduleRect();
    // One line of a series on axes x, y, coloured by its position, named in `into`.
    QCPGraph* addSeries(QCPAxis* x, QCPAxis* y, const QString& name, int position, QSharedPointer<QCPGraphDataContainer> data, QCPLegend* into);

    QCPAxisRect* normRect_ = nullptr;
    QCPAxisRect* scheduleRect_ = nullptr;
    QCPLegend* scheduleLegend_ = nullptr;
    QCPMarginGroup* margins_ = nullptr;
    QVector<QCPGraph*> scheduled_;
    QCPItemStraightLine* scheduleCursor_ = nullptr;
    QCPLegend* normLegend_ = nullptr;
    QCPGraph* loss_ = nullptr;
    std::array<QCPGraph*, 4> markers_{};
    QVector<QCPGraph*> norms_;
    QCPItemStraightLine* lossCursor_ = nullptr;
    QCPItemStraightLine* normCursor_ = nullptr;
    QAction* logLoss_ = nullptr;
    std::vector<VerdictPoint> verdicts_;  // by index
};

}  // namespace zkdv::ui
