#include "plots/element_difference_chart.h"

#include <algorithm>
#include <cmath>

#include "plots/chart_style.h"
#include "plots/wrapped_text_element.h"
#include "zkdv/tape/shape_text.h"

namespace zkdv::ui {

namespace {

QCPRange finiteRange(const std::vector<double>& a, const std::vector<double>& b)
{
    double low = INFINITY, high = -INFINITY;
    for (const std::vector<double>* values : {&a, &b})
        for (double v : *values)
            if (std::isfinite(v)) {
                low = std::min(low, v);
                high = std::max(high, v);
            }
    if (!(low <= high))
        return QCPRange(-1, 1);
    if (low == high)
        return QCPRange(low - 1, high + 1);
    return QCPRange(low, high);
}

}  // namespace

ElementDifferenceChart::ElementDifferenceChart(QWidget* parent) : QCustomPlot(parent)
{
    setMinimumHeight(220);
    setAutoAddPlottableToLegend(false);  // the titles and axis labels name everything drawn
    reset();
}

void ElementDifferenceChart::reset()
{
    clearPlottables();
    clearItems();
    plotLayout()->clear();  // deletes the axis rects and titles; the colour scales with them
    differenceMap_ = nullptr;
    histogram_ = nullptr;
    heatmap_ = false;
    largestDifference_ = 0.0;
    title_ = new WrappedTextElement(this, tr("Compare elements: replay the transaction to see its deltas element by element"));
    plotLayout()->addElement(0, 0, title_);
}

void ElementDifferenceChart::clear()
{
    reset();
    replot(QCustomPlot::rpQueuedReplot);
}

QCPColorMap* ElementDifferenceChart::addMap(QCPAxisRect* rect, const QString& title, std::int64_t rows, std::int64_t columns,
                                            const std::vector<double>& values, QCPRange range, const QCPColorGradient& gradient)
{
    auto* map = new QCPColorMap(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
    map->setName(title);
    map->data()->setSize(static_cast<int>(columns), static_cast<int>(rows));
    map->data()->setRange(QCPRange(0, static_cast<double>(columns - 1)), QCPRange(0, static_cast<double>(rows - 1)));
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < columns; ++c)
            map->data()->setCell(static_cast<int>(c), static_cast<int>(r), values[static_cast<std::size_t>(r * columns + c)]);
    map->setGradient(gradient);
    map->setDataRange(range);
    map->setInterpolate(false);
    rect->axis(QCPAxis::atLeft)->setRangeReversed(true);  // row 0 on top, as the tensor prints
    rect->axis(QCPAxis::atBottom)->setRange(-0.5, static_cast<double>(columns) - 0.5);
    rect->axis(QCPAxis::atLeft)->setRange(-0.5, static_cast<double>(rows) - 0.5);
    rect->axis(QCPAxis::atBottom)->setLabel(title);
    // Whole rows and columns only: an element has no index 2.5.
    for (QCPAxis* axis : {rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft)}) {
        auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
        ticker->setTickStep(1.0);
        ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
        axis->setTicker(ticker);
        axis->setSubTicks(false);
    }
    auto* scale = new QCPColorScale(this);
    scale->setType(QCPAxis::atBottom);
    scale->setGradient(gradient);
    scale->setDataRange(range);
    scale->axis()->ticker()->setTickCount(3);  // three maps side by side leave little room for labels
    map->setColorScale(scale);
    return map;
}

void ElementDifferenceChart::setTensor(const QString& name, const std::vector<std::int64_t>& shape, const std::vector<double>& recorded,
                                       const std::vector<double>& replayed)
{
    reset();
    const bool compared = replayed.size() == recorded.size() && !recorded.empty();
    std::vector<double> difference;
    if (compared) {
        difference.resize(recorded.size());
        for (std::size_t i = 0; i < recorded.size(); ++i) {
            difference[i] = replayed[i] - recorded[i];
            if (std::isfinite(difference[i]))
                largestDifference_ = std::max(largestDifference_, std::abs(difference[i]));
        }
    }
    title_->setText(compared ? tr("%1 %2: largest |replayed − recorded| %3").arg(name, QString::fromStdString(shapeText(shape))).arg(largestDifference_, 0, 'g', 6)
                             : tr("%1 %2: recorded values only (the replay's dtype or shape differs)").arg(name, QString::fromStdString(shapeText(shape))));
    const QCPRange values = finiteRange(recorded, replayed);
    const double spread = largestDifference_ > 0 ? largestDifference_ : 1.0;

    heatmap_ = shape.size() == 2 && shape[0] > 0 && shape[1] > 0;
    if (heatmap_) {
        auto* maps = new QCPLayoutGrid;
        plotLayout()->addElement(1, 0, maps);
        QCPColorGradient valueGradient(QCPColorGradient::gpThermal);
        QCPColorGradient differenceGradient(QCPColorGradient::gpPolar);
        const std::vector<const std::vector<double>*> shown = {&recorded, compared ? &replayed : nullptr, compared ? &difference : nullptr};
        const QStringList titles = {tr("recorded"), tr("replayed"), tr("replayed − recorded")};
        int column = 0;
        for (int k = 0; k < 3; ++k) {
            if (!shown[static_cast<std::size_t>(k)])
                continue;
            auto* cell = new QCPLayoutGrid;
            maps->addElement(0, column++, cell);
            auto* rect = new QCPAxisRect(this);
            cell->addElement(0, 0, rect);
            QCPColorMap* map = addMap(rect, titles[k], shape[0], shape[1], *shown[static_cast<std::size_t>(k)],
                                      k == 2 ? QCPRange(-spread, spread) : values, k == 2 ? differenceGradient : valueGradient);
            cell->addElement(1, 0, map->colorScale());
            map->colorScale()->setMaximumSize(QWIDGETSIZE_MAX, 40);
            if (k == 2)
                differenceMap_ = map;
        }
    } else {
        auto* valuesRect = new QCPAxisRect(this);
        plotLayout()->addElement(1, 0, valuesRect);
        QVector<double> index(static_cast<qsizetype>(recorded.size()));
        for (qsizetype i = 0; i < index.size(); ++i)
            index[i] = static_cast<double>(i);
        auto* recordedGraph = new QCPGraph(valuesRect->axis(QCPAxis::atBottom), valuesRect->axis(QCPAxis::atLeft));
        recordedGraph->setName(tr("recorded"));
        recordedGraph->setData(index, QVector<double>(recorded.begin(), recorded.end()), true);
        recordedGraph->setPen(QPen(QColor(0x1f, 0x77, 0xb4), 0));
        if (compared) {
            auto* replayedGraph = new QCPGraph(valuesRect->axis(QCPAxis::atBottom), valuesRect->axis(QCPAxis::atLeft));
            replayedGraph->setName(tr("replayed"));
            replayedGraph->setData(index, QVector<double>(replayed.begin(), replayed.end()), true);
            replayedGraph->setPen(QPen(QColor(0xd6, 0x27, 0x28), 0, Qt::DashLine));
        }
        valuesRect->axis(QCPAxis::atBottom)->setLabel(tr("element (row-major)"));
        valuesRect->axis(QCPAxis::atLeft)->setLabel(tr("value"));
        valuesRect->axis(QCPAxis::atBottom)->setRange(-0.5, std::max(1.0, static_cast<double>(recorded.size()) - 0.5));
        valuesRect->axis(QCPAxis::atLeft)->setRange(values);
        if (compared) {
            auto* histogramRect = new QCPAxisRect(this);
            plotLayout()->addElement(2, 0, histogramRect);
            std::vector<double> counts(kHistogramBins, 0.0);
            const double width = 2.0 * spread / kHistogramBins;
            for (double d : difference) {
                if (!std::isfinite(d))
                    continue;
                const int bin = std::clamp(static_cast<int>(std::floor((d + spread) / width)), 0, kHistogramBins - 1);
                counts[static_cast<std::size_t>(bin)] += 1;
            }
            histogram_ = new QCPBars(histogramRect->axis(QCPAxis::atBottom), histogramRect->axis(QCPAxis::atLeft));
            histogram_->setName(tr("elements"));
            QVector<QCPBarsData> bars;
            double largest = 1;
            for (int b = 0; b < kHistogramBins; ++b) {
                bars.append(QCPBarsData(-spread + (b + 0.5) * width, counts[static_cast<std::size_t>(b)]));
                largest = std::max(largest, counts[static_cast<std::size_t>(b)]);
            }
            histogram_->data()->set(bars, true);
            histogram_->setWidth(width * 0.9);
            histogram_->setBrush(QColor(0x1f, 0x77, 0xb4));
            histogram_->setPen(Qt::NoPen);
            QCPAxis* y = histogramRect->axis(QCPAxis::atLeft);
            ChartStyle::makeLogAxis(y);
            y->setRange(ChartStyle::kCountFloor, largest * 4);
            y->setLabel(tr("elements"));
            histogramRect->axis(QCPAxis::atBottom)->setLabel(tr("replayed − recorded"));
            histogramRect->axis(QCPAxis::atBottom)->setRange(-spread, spread);
        }
    }
    ChartStyle::applyDesktopPalette(this);
    replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace zkdv::ui
