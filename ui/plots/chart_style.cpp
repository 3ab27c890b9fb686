#include "plots/chart_style.h"

#include "plots/chart_text_room.h"

#include <algorithm>
#include <cmath>

#include <qcustomplot.h>

#include "plots/chart_tools.h"
#include "plots/verdict_palette.h"

namespace zkdv::ui {

namespace {

// Powers of ten as 10ⁿ; any other tick (a range within one decade gets linear ticks) as its
// value: with the power format every tick between 3.5 and 4.4 read "4·10⁰".
class LogTicker : public QCPAxisTickerLog {
protected:
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision) override
    {
        const double exponent = std::log10(std::fabs(tick));
        if (tick != 0 && std::fabs(exponent - std::round(exponent)) < 1e-9)
            return QCPAxisTickerLog::getTickLabel(tick, locale, formatChar, precision);
        return locale.toString(tick, 'g', 6);
    }
};

}  // namespace

void ChartStyle::makeLogAxis(QCPAxis* axis)
{
    axis->setScaleType(QCPAxis::stLogarithmic);
    QSharedPointer<QCPAxisTickerLog> ticker(new LogTicker);
    ticker->setLogBase(10);
    ticker->setSubTickCount(0);
    axis->setTicker(ticker);
    axis->setNumberFormat("eb");
    axis->setNumberPrecision(0);
}

void ChartStyle::applyInteractions(QCustomPlot* plot)
{
    plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom | QCP::iSelectPlottables);
    plot->setNoAntialiasingOnDrag(true);
    ChartTools::of(plot);
    ChartTools::of(plot);
}

void ChartStyle::applyDesktopPalette(QCustomPlot* plot)
{
    // Every chart is styled here, so every chart keeps its tick labels legible when narrow.
    ChartTextRoom::keepTickLabelsApart(plot);
    const QPalette palette = plot->palette();
    const QColor text = palette.color(QPalette::WindowText);
    QColor grid = palette.color(QPalette::Mid);
    plot->setBackground(palette.brush(QPalette::Base));
    for (QCPAxisRect* rect : plot->axisRects()) {
        rect->setBackground(palette.brush(QPalette::Base));
        for (QCPAxis* axis : rect->axes()) {
            axis->setBasePen(QPen(text, 0));
            axis->setTickPen(QPen(text, 0));
            axis->setSubTickPen(QPen(text, 0));
            axis->setTickLabelColor(text);
            axis->setLabelColor(text);
            axis->grid()->setPen(QPen(grid, 0, Qt::DotLine));
            grid.setAlpha(90);
            axis->grid()->setSubGridPen(QPen(grid, 0, Qt::DotLine));
            grid.setAlpha(255);
            axis->grid()->setZeroLinePen(Qt::NoPen);
        }
    }
    for (QCPLayoutElement* element : plot->plotLayout()->elements(true)) {
        if (auto* legend = qobject_cast<QCPLegend*>(element)) {
            legend->setTextColor(text);
            for (int i = 0; i < legend->itemCount(); ++i)
                if (QCPAbstractLegendItem* item = legend->item(i))
                    item->setTextColor(text);
        } else if (auto* title = qobject_cast<QCPTextElement*>(element)) {
            title->setTextColor(text);
        }
    }
    for (int i = 0; i < plot->itemCount(); ++i)
        if (auto* line = qobject_cast<QCPItemStraightLine*>(plot->item(i)); line && line->property("zkdvCursor").toBool()) {
            QPen pen = line->pen();
            pen.setColor(text);
            line->setPen(pen);
        }
}

void ChartStyle::placeLegendBeside(QCustomPlot* plot, QCPLegend* legend, QCPAxisRect* rect, int rowsPerColumn)
{
    QCPLayoutGrid* grid = plot->plotLayout();
    int row = -1, column = -1;
    for (int r = 0; r < grid->rowCount() && row < 0; ++r)
        for (int c = 0; c < grid->columnCount(); ++c)
            if (grid->element(r, c) == rect) {
                row = r;
                column = c;
                break;
            }
    if (row < 0)
        return;
    if (QCPLayout* holder = legend->layout())
        holder->take(legend);
    grid->addElement(row, column + 1, legend);
    grid->setColumnStretchFactor(column + 1, 0.001);  // as narrow as its entries
    legend->setWrap(rowsPerColumn);
    legend->setFillOrder(QCPLayoutGrid::foRowsFirst, true);
    // Its height is the row's (the plot area's), never more: columns make room for entries.
    legend->setMinimumSize(0, 1);
    legend->setMargins(QMargins(4, 2, 4, 2));
    legend->setBorderPen(Qt::NoPen);
    legend->setBrush(Qt::NoBrush);
    // As many entries to a column as the rectangle's height holds, whatever the window's size:
    // the layout gives the legend no more height than its row, so more would be cut off.
    QObject::connect(plot, &QCustomPlot::afterLayout, legend, [plot, legend, rect] {
        if (!legend->visible() || legend->itemCount() == 0)
            return;
        const int entry = legend->item(0)->minimumOuterSizeHint().height() + legend->rowSpacing();
        const int room = rect->outerRect().height() - legend->margins().top() - legend->margins().bottom();
        const int rows = std::max(1, entry > 0 ? (room + legend->rowSpacing()) / entry : 1);
        if (rows == legend->wrap())
            return;
        legend->setWrap(rows);
        legend->setFillOrder(QCPLayoutGrid::foRowsFirst, true);
        plot->replot(QCustomPlot::rpQueuedReplot);
    });
}

QString ChartStyle::formatValue(double value)
{
    if (value == 0.0)
        return QStringLiteral("0");
    if (std::isnan(value))
        return QStringLiteral("not recorded");
    if (std::fabs(value) >= 1e-3 && std::fabs(value) < 1e6)
        return QString::number(value, 'g', 6);
    return QString::number(value, 'e', 3);
}

QString ChartStyle::describeComparison(const TensorComparison& comparison)
{
    const DivergenceMetrics& m = comparison.metrics;
    QString text = QString::fromStdString(comparison.label());
    text += QObject::tr("\nverdict %1").arg(VerdictPalette::label(comparison.verdict));
    text += QObject::tr("\n%1 elements%2").arg(m.elements).arg(m.bitwiseEqual ? QObject::tr(", bitwise equal") : QString());
    text += QObject::tr("\nmax ULP %1, mean ULP %2").arg(formatValue(m.maxUlp), formatValue(m.meanUlp));
    text += QObject::tr("\nrelative L2 %1, max abs %2").arg(formatValue(m.relativeL2), formatValue(m.maxAbs));
    text += QObject::tr("\ncosine %1").arg(QString::number(m.cosine, 'g', 10));
    if (m.finiteMismatch())
        text += QObject::tr("\nNaN mismatches %1, Inf mismatches %2").arg(m.nanMismatches).arg(m.infMismatches);
    if (!comparison.note.empty())
        text += QLatin1Char('\n') + QString::fromStdString(comparison.note);
    return text;
}

QCPTextElement* ChartStyle::setUpUlpBarChart(QCustomPlot* plot)
{
    applyInteractions(plot);
    plot->plotLayout()->insertRow(0);
    auto* title = new QCPTextElement(plot, QObject::tr("no transaction selected"));
    plot->plotLayout()->addElement(0, 0, title);
    plot->yAxis->setLabel(QObject::tr("max ULP distance (0 drawn at %1)").arg(kUlpFloor));
    makeLogAxis(plot->yAxis);
    plot->yAxis->setRange(kUlpFloor / 2, 1e3);
    plot->xAxis->setTickLabelRotation(60);
    plot->xAxis->setTickLabelFont(QFont(plot->font().family(), 7));
    plot->xAxis->setSubTicks(false);
    plot->xAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
    return title;
}

}  // namespace zkdv::ui
