#pragma once
// A chart whose points are transactions: hovering shows a point's tooltip, and a click (not
// a drag) on a point emits the transaction it stands for.

#include <optional>

#include <qcustomplot.h>

namespace zkdv::ui {

class TransactionPlot : public QCustomPlot {
    Q_OBJECT

public:
    using QCustomPlot::QCustomPlot;

    // The transaction under `pos`, if any.
    virtual std::optional<quint64> transactionAt(const QPointF& pos) const = 0;

Q_SIGNALS:
    void transactionClicked(quint64 index);

protected:
    virtual QString tooltipFor(quint64 index) const = 0;

    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;

private:
    QPoint pressPos_;
};

}  // namespace zkdv::ui
