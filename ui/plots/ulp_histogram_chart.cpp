#include "plots/ulp_histogram_chart.h"

#include <cmath>

#include <QToolTip>

#include "plots/chart_style.h"

namespace zkdv::ui {

namespace {

QString powerOfTwo(int exponent)
{
    return exponent <= 10 ? QString::number(1ull << exponent) : QStringLiteral("2^%1").arg(exponent);
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
    bars_->setWidth(0.8);
}

void UlpHistogramChart::setHistogram(const UlpHistogram& histogram, const QString& caption)
{
    histogram_ = histogram;
    total_ = 0;
    QVector<QCPBarsData> data;
    data.reserve(static_cast<qsizetype>(histogram.size()));
    double largest = 1;
    for (std::size_t bin = 0; bin < histogram.size(); ++bin) {
        total_ += histogram[bin];
        // An empty bin has no bar (0 lies off a log axis); it still has a data point.
        const double count = static_cast<double>(histogram[bin]);
        largest = std::max(largest, count);
        data.append(QCPBarsData(static_cast<double>(bin), count));
    }
    bars_->data()->set(data, true);
    yAxis->setRange(ChartStyle::kCountFloor, largest * 4);
    title_->setText(total_ > 0 ? tr("%1: %2 elements compared").arg(caption).arg(total_)
                               : tr("%1: no ULP histogram").arg(caption));
}

void UlpHistogramChart::clear()
{
    histogram_ = {};
    total_ = 0;
    bars_->data()->clear();
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
    const QString share = total_ > 0 ? QStringLiteral(" (%1 %)").arg(100.0 * static_cast<double>(count) / static_cast<double>(total_), 0, 'g', 4)
                                     : QString();
    QToolTip::showText(event->globalPosition().toPoint(),
                       tr("ULP distance %1\n%2 elements%3").arg(binLabel(bin)).arg(count).arg(share), this);
}

}  // namespace zkdv::ui
