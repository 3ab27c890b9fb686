#include "plots/transaction_plot.h"

#include <QToolTip>

namespace zkdv::ui {

namespace {
constexpr int kClickSlop = 4;  // pixels a click may move before it is a drag
}

void TransactionPlot::mousePressEvent(QMouseEvent* event)
{
    pressPos_ = event->pos();
    QCustomPlot::mousePressEvent(event);
}

void TransactionPlot::mouseMoveEvent(QMouseEvent* event)
{
    QCustomPlot::mouseMoveEvent(event);
    if (event->buttons() != Qt::NoButton)
        return;
    if (const std::optional<quint64> index = transactionAt(event->position()))
        QToolTip::showText(event->globalPosition().toPoint(), tooltipFor(*index), this);
    else
        QToolTip::hideText();
}

void TransactionPlot::mouseReleaseEvent(QMouseEvent* event)
{
    const bool click = event->button() == Qt::LeftButton && (event->pos() - pressPos_).manhattanLength() <= kClickSlop;
    QCustomPlot::mouseReleaseEvent(event);
    if (!click)
        return;
    if (const std::optional<quint64> index = transactionAt(event->position()))
        Q_EMIT transactionClicked(*index);
}

}  // namespace zkdv::ui
