#include "plots/ulp_histogram_chart.h"

#include <cmath>

#include <QToolTip>

#include "plots/chart_style.h"

namespace zkdv::ui {

namespace {

constexpr double kBarWidth = 0.8;  // of a bin; each run's half of it beside a comparison

QString powerOfTwo(int exponent)
{
    return exponent <= 10 ? QString::number(1ull << exponent) : QStringLiteral("2^%1").arg(exponent);
}

// The bins as bars, and their sum.
quint64 fillBars(QCPBars* bars, const UlpHistogram& histogram)
{
    quint64 total = 0;
    QVector<QCPBarsData> data;
    data.reserve(static_cast<qsizetype>(histogram.size()));
    for (std::size_t bin = 0; bin < histogram.size(); ++bin) {
        total += histogram[bin];
        // An empty bin has no bar (0 lies off a log axis); it still has a data point.
        data.append(QCPBarsData(static_cast<double>(bin), static_cast<double>(histogram[bin])));
    }
    bars->data()->set(data, true);
    return total;
}

}  // namespace

UlpHistogramChart::UlpHistogramChart(QWidget* parent) : QCustomPlot(parent)
{
    ChartStyle::applyInteractions(this);
    plotLayout()->insertRow(0);
    title_ = new QCPTextElement(this, tr("no replay run"));
    plotLayout()->addElement(0, 0, title_);
    xAxis->setLabel(tr("ULP distance (log2 bins)"));
    yAxis->setLabel(tr("elements"));
    ChartStyle::makeLogAxis(yAxis);
    yAxis->setRange(ChartStyle::kCountFloor, 10);
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    ticker->addTick(0, QStringLiteral("0"));
    for (int bin = 1; bin < static_cast<int>(kUlpHistogramBins); bin += bin < 9 ? 4 : 8)
        ticker->addTick(bin, powerOfTwo(bin - 1));
    xAxis->setTicker(ticker);
    xAxis->setSubTicks(false);
    xAxis->setRange(-0.8, static_cast<double>(kUlpHistogramBins) - 0.2);
    bars_ = new QCPBars(xAxis, yAxis);
    bars_->setName(tr("elements"));
    bars_->setPen(QPen(QColor(0x1f, 0x3a, 0x93), 0));
    bars_->setBrush(QColor(0x1f, 0x77, 0xb4));
    bars_->setWidth(kBarWidth);
    comparisonBars_ = new QCPBars(xAxis, yAxis);
    comparisonBars_->setPen(QPen(QColor(0x94, 0x67, 0xbd), 1.5));
    comparisonBars_->setBrush(QColor(0x94, 0x67, 0xbd, 0x50));
    comparisonBars_->setVisible(false);
    group_ = new QCPBarsGroup(this);
    group_->setSpacing(0);
    // The legend names the runs only while two are shown: empty (and as narrow as its
    // margins) beside the bars otherwise.
    legend->setFont(QFont(font().family(), 8));
    ChartStyle::placeLegendBeside(this, legend, axisRect());
    bars_->removeFromLegend();
    comparisonBars_->removeFromLegend();
    legend->setVisible(false);
}

void UlpHistogramChart::setHistogram(const UlpHistogram& histogram, const QString& caption)
{
    histogram_ = histogram;
    total_ = fillBars(bars_, histogram);
    rescale();
    nameBars();
    title_->setText(total_ > 0 ? tr("%1: %2 elements compared").arg(caption).arg(total_)
                               : tr("%1: no ULP histogram").arg(caption));
}

void UlpHistogramChart::setComparison(const UlpHistogram& histogram, const QString& name, const QString& shownName)
{
    comparisonName_ = name;
    shownName_ = shownName;
    comparison_ = name.isEmpty() ? UlpHistogram{} : histogram;
    comparisonTotal_ = fillBars(comparisonBars_, comparison_);
    const bool shown = hasComparison();
    comparisonBars_->setVisible(shown);
    bars_->setWidth(shown ? kBarWidth / 2 : kBarWidth);
    comparisonBars_->setWidth(kBarWidth / 2);
    bars_->setBarsGroup(shown ? group_ : nullptr);
    comparisonBars_->setBarsGroup(shown ? group_ : nullptr);
    nameBars();
    if (shown) {
        bars_->addToLegend();
        comparisonBars_->addToLegend();
        ChartStyle::applyDesktopPalette(this);  // the entries just added, in the desktop's colours
    } else {
        bars_->removeFromLegend();
        comparisonBars_->removeFromLegend();
    }
    legend->setVisible(shown);
    rescale();
}

void UlpHistogramChart::nameBars()
{
    // Just the runs: a narrow legend leaves the bins' tick labels their room (counts are in
    // the tooltips).
    bars_->setName(hasComparison() ? shownName_ : tr("elements"));
    comparisonBars_->setName(comparisonName_);
}

void UlpHistogramChart::rescale()
{
    double largest = 1;
    for (const UlpHistogram* histogram : {&histogram_, &comparison_})
        for (quint64 count : *histogram)
            largest = std::max(largest, static_cast<double>(count));
    yAxis->setRange(ChartStyle::kCountFloor, largest * 4);
}

void UlpHistogramChart::clear()
{
    histogram_ = {};
    total_ = 0;
    bars_->data()->clear();
    clearComparison();
    title_->setText(tr("no replay run"));
}

QString UlpHistogramChart::binLabel(int bin)
{
    if (bin == 0)
        return QStringLiteral("0");
    if (bin == static_cast<int>(kUlpHistogramBins) - 1)
        return QStringLiteral("[2^63, 2^64)");
    return QStringLiteral("[%1, %2)").arg(powerOfTwo(bin - 1), powerOfTwo(bin));
}

void UlpHistogramChart::mouseMoveEvent(QMouseEvent* event)
{
    QCustomPlot::mouseMoveEvent(event);
    if (event->buttons() != Qt::NoButton)
        return;
    const double key = std::round(xAxis->pixelToCoord(event->position().x()));
    if (!axisRect()->rect().contains(event->pos()) || key < 0 || key >= static_cast<double>(kUlpHistogramBins)) {
        QToolTip::hideText();
        return;
    }
    const int bin = static_cast<int>(key);
    const quint64 count = histogram_[static_cast<std::size_t>(bin)];
    const auto share = [](quint64 part, quint64 whole) {
        return whole > 0 ? QStringLiteral(" (%1 %)").arg(100.0 * static_cast<double>(part) / static_cast<double>(whole), 0, 'g', 4) : QString();
    };
    QString text = tr("ULP distance %1\n%2 elements%3").arg(binLabel(bin)).arg(count).arg(share(count, total_));
    if (hasComparison()) {
        const quint64 compared = comparison_[static_cast<std::size_t>(bin)];
        text += tr("\n%1: %2 elements%3").arg(comparisonName_).arg(compared).arg(share(compared, comparisonTotal_));
    }
    QToolTip::showText(event->globalPosition().toPoint(), text, this);
}

}  // namespace zkdv::ui
