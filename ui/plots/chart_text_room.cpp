#include "plots/chart_text_room.h"

#include <qcustomplot.h>

#include <QFontMetrics>

#include <algorithm>

namespace zkdv::ui {

namespace {

constexpr char kWantedTicks[] = "zkdvWantedTickCount";
constexpr char kShrunkAt[] = "zkdvTicksShrunkAtLength";  // the axis length that last needed fewer ticks
constexpr int kLabelGap = 6;  // pixels between two labels, so that they read as two

QList<QCPAxis*> axesOf(QCustomPlot* plot)
{
    QList<QCPAxis*> axes;
    for (QCPAxisRect* rect : plot->axisRects())
        axes << rect->axes();
    // Colour scales, wherever the layout nests them (one under each map).
    for (QCPLayoutElement* element : plot->plotLayout()->elements(true))
        if (auto* scale = qobject_cast<QCPColorScale*>(element); scale && !axes.contains(scale->axis()))
            axes << scale->axis();
    return axes;
}

bool horizontal(const QCPAxis* axis) { return axis->axisType() == QCPAxis::atBottom || axis->axisType() == QCPAxis::atTop; }

// Each label's extent along the axis, in pixels, in tick order.
QList<QPair<double, double>> labelExtents(QCPAxis* axis)
{
    QList<QPair<double, double>> extents;
    const QVector<double> ticks = axis->tickVector();
    const QVector<QString> labels = axis->tickVectorLabels();
    const QFontMetrics metrics(axis->tickLabelFont());
    for (int i = 0; i < ticks.size() && i < labels.size(); ++i) {
        if (!axis->range().contains(ticks[i]))
            continue;
        const double centre = axis->coordToPixel(ticks[i]);
        const double size = horizontal(axis) ? metrics.horizontalAdvance(labels[i]) : metrics.height();
        extents.append({centre - size / 2, centre + size / 2});
    }
    std::sort(extents.begin(), extents.end());
    return extents;
}

bool checked(const QCPAxis* axis)
{
    // Rotated labels (category names) are laid out by their own chart.
    return axis->visible() && axis->tickLabels() && axis->tickLabelRotation() == 0 && !axis->ticker().isNull();
}

}  // namespace

bool ChartTextRoom::labelsOverlap(QCPAxis* axis)
{
    const QList<QPair<double, double>> extents = labelExtents(axis);
    for (int i = 1; i < extents.size(); ++i)
        if (extents[i].first < extents[i - 1].second + kLabelGap / 2)
            return true;
    return false;
}

QStringList ChartTextRoom::crowdedText(QCustomPlot* plot)
{
    QStringList crowded;
    const QRect chart = plot->rect();
    for (QCPAxis* axis : axesOf(plot)) {
        if (!checked(axis))
            continue;
        const QString name = axis->label().isEmpty() ? QStringLiteral("axis %1").arg(axis->axisType()) : axis->label();
        if (labelsOverlap(axis))
            crowded << QStringLiteral("%1: tick labels overlap").arg(name);
        const QList<QPair<double, double>> extents = labelExtents(axis);
        if (!extents.isEmpty()) {
            const double low = extents.front().first, high = extents.back().second;
            const double begin = horizontal(axis) ? chart.left() : chart.top();
            const double end = horizontal(axis) ? chart.right() + 1 : chart.bottom() + 1;
            if (low < begin - 0.5 || high > end + 0.5)
                crowded << QStringLiteral("%1: a tick label leaves the chart").arg(name);
        }
    }
    for (QCPLayoutElement* element : plot->plotLayout()->elements(true)) {
        if (auto* text = qobject_cast<QCPTextElement*>(element); text && text->visible() && !text->text().isEmpty()) {
            const QRect room = text->rect();
            const QRect needed = QFontMetrics(text->font()).boundingRect(room, Qt::AlignCenter | text->textFlags(), text->text());
            if (needed.width() > room.width() + 1 || needed.height() > room.height() + 1)
                crowded << QStringLiteral("text \"%1\": needs %2x%3, has %4x%5")
                               .arg(text->text()).arg(needed.width()).arg(needed.height()).arg(room.width()).arg(room.height());
        }
        if (auto* legend = qobject_cast<QCPLegend*>(element); legend && legend->visible() && !chart.contains(legend->outerRect()))
            crowded << QStringLiteral("legend: leaves the chart");
    }
    return crowded;
}

void ChartTextRoom::keepTickLabelsApart(QCustomPlot* plot)
{
    if (plot->property("zkdvKeepsTickLabelsApart").toBool())
        return;  // styled again (the desktop's palette changed): one watcher is enough
    plot->setProperty("zkdvKeepsTickLabelsApart", true);
    QObject::connect(plot, &QCustomPlot::afterReplot, plot, [plot] {
        bool again = false;
        for (QCPAxis* axis : axesOf(plot)) {
            if (!checked(axis))
                continue;
            QCPAxisTicker* ticker = axis->ticker().data();
            const QVariant wanted = axis->property(kWantedTicks);
            if (!wanted.isValid())
                axis->setProperty(kWantedTicks, ticker->tickCount());
            const int most = axis->property(kWantedTicks).toInt();
            const double length = horizontal(axis) ? axis->axisRect()->width() : axis->axisRect()->height();
            if (labelsOverlap(axis) && ticker->tickCount() > 2) {
                ticker->setTickCount(ticker->tickCount() - 1);
                axis->setProperty(kShrunkAt, length);
                again = true;
                continue;
            }
            // Room again (the chart grew): one more tick, taken back above if it crowds.
            const QList<QPair<double, double>> extents = labelExtents(axis);
            double widest = 0;
            for (const auto& extent : extents)
                widest = std::max(widest, extent.second - extent.first);
            const bool grew = length > axis->property(kShrunkAt).toDouble() + 1;
            if (ticker->tickCount() < most && grew && widest > 0 && (ticker->tickCount() + 1) * (widest + kLabelGap) * 2 < length) {
                ticker->setTickCount(ticker->tickCount() + 1);
                again = true;
            }
        }
        if (again)
            plot->replot(QCustomPlot::rpQueuedReplot);
    });
}

}  // namespace zkdv::ui
