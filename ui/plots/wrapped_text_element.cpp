#include "plots/wrapped_text_element.h"

#include <QFontMetrics>

#include <algorithm>

namespace zkdv::ui {

WrappedTextElement::WrappedTextElement(QCustomPlot* plot, const QString& text) : QCPTextElement(plot, text)
{
    setTextFlags(Qt::AlignCenter | Qt::TextWordWrap);  // centred over the plot, like QCPTextElement's own
}

QSize WrappedTextElement::wrappedSize() const
{
    // A title row spans the chart: its width is known before the layout places it, so the
    // height asked for fits the lines the text will take there.
    const QMargins around = margins();
    const int width = std::max(1, mParentPlot->viewport().width() - around.left() - around.right());
    const QRect needed = QFontMetrics(mainFont()).boundingRect(QRect(0, 0, width, 100000), Qt::AlignCenter | Qt::TextWordWrap, text());
    return {needed.width() + around.left() + around.right(), needed.height() + around.top() + around.bottom()};
}

QSize WrappedTextElement::minimumOuterSizeHint() const { return {0, wrappedSize().height()}; }

QSize WrappedTextElement::maximumOuterSizeHint() const { return {QWIDGETSIZE_MAX, wrappedSize().height()}; }

}  // namespace zkdv::ui
