#include "widgets/eliding_status_bar.h"

#include <QPainter>
#include <QStyleOption>

namespace zkdv::ui {

ElidingStatusBar::ElidingStatusBar(QWidget* parent) : QStatusBar(parent)
{
    connect(this, &QStatusBar::messageChanged, this, [this](const QString& message) { setToolTip(message); });
}

void ElidingStatusBar::addPermanent(QWidget* widget)
{
    permanent_.append(widget);
    addPermanentWidget(widget);
}

QRect ElidingStatusBar::messageArea() const
{
    // As QStatusBar lays out its message: 6 px in, up to the leftmost visible permanent widget
    // (with a gap, so the last letter never touches the row counter).
    int right = width() - 12;
    for (const QPointer<QWidget>& widget : permanent_)
        if (widget && widget->isVisible())
            right = std::min(right, widget->x() - 8);
    return QRect(6, 0, std::max(0, right - 6), height());
}

QString ElidingStatusBar::shownMessage() const
{
    return fontMetrics().elidedText(currentMessage(), Qt::ElideRight, messageArea().width());
}

void ElidingStatusBar::paintEvent(QPaintEvent* event)
{
    if (currentMessage().isEmpty()) {
        QStatusBar::paintEvent(event);
        return;
    }
    // What QStatusBar paints with a message, but the message elided to its area.
    QPainter painter(this);
    QStyleOption option;
    option.initFrom(this);
    style()->drawPrimitive(QStyle::PE_PanelStatusBar, &option, &painter, this);
    painter.setPen(palette().windowText().color());
    painter.drawText(messageArea(), Qt::AlignLeading | Qt::AlignVCenter | Qt::TextSingleLine, shownMessage());
}

}  // namespace zkdv::ui
