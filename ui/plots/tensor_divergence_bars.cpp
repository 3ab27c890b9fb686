#include "plots/tensor_divergence_bars.h"

#include <cmath>

#include <QToolTip>

#include "plots/chart_style.h"
#include "plots/verdict_palette.h"

namespace zkdv::ui {

TensorDivergenceBars::TensorDivergenceBars(QWidget* parent) : QCustomPlot(parent)
{
    title_ = ChartStyle::setUpUlpBarChart(this);
    for (Verdict verdict : {Verdict::Exact, Verdict::WithinTolerance, Verdict::Diverged, Verdict::Unverifiable}) {
        auto* bars = new QCPBars(xAxis, yAxis);
        bars->setName(VerdictPalette::label(verdict));
        const QColor color = VerdictPalette::color(verdict);
        bars->setPen(QPen(color.darker(130), 0));
        bars->setBrush(color);
        bars->setWidth(0.7);
        bars_[static_cast<std::size_t>(verdict)] = bars;
    }
    legend->setVisible(true);
    legend->setFont(QFont(font().family(), 8));
    ChartStyle::placeLegendBeside(this, legend, axisRect());
}

void TensorDivergenceBars::setComparisons(std::optional<quint64> index, const std::vector<TensorComparison>& comparisons)
{
    comparisons_ = comparisons;
    std::array<QVector<QCPBarsData>, 4> data;
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    double largest = 1;
    for (std::size_t i = 0; i < comparisons_.size(); ++i) {
        const TensorComparison& comparison = comparisons_[i];
        const double value = ChartStyle::onLogAxis(comparison.metrics.maxUlp, ChartStyle::kUlpFloor);
        largest = std::max(largest, value);
        data[static_cast<std::size_t>(comparison.verdict)].append(QCPBarsData(static_cast<double>(i), value));
        ticker->addTick(static_cast<double>(i), QString::fromStdString(comparison.label()));
    }
    for (std::size_t v = 0; v < data.size(); ++v)
        bars_[v]->data()->set(data[v], true);
    xAxis->setTicker(ticker);
    xAxis->setRange(-0.6, std::max<double>(1, static_cast<double>(comparisons_.size())) - 0.4);
    yAxis->setRange(ChartStyle::kUlpFloor / 2, largest * 4);
    if (!index)
        title_->setText(tr("no transaction selected"));
    else if (comparisons_.empty())
        title_->setText(tr("transaction %1: no comparisons in this run").arg(*index));
    else
        title_->setText(tr("transaction %1: %n comparison(s)", nullptr, static_cast<int>(comparisons_.size())).arg(*index));
}

int TensorDivergenceBars::barCount() const
{
    int count = 0;
    for (QCPBars* bars : bars_)
        count += bars->data()->size();
    return count;
}

void TensorDivergenceBars::mouseMoveEvent(QMouseEvent* event)
{
    QCustomPlot::mouseMoveEvent(event);
    if (event->buttons() != Qt::NoButton)
        return;
    const double key = std::round(xAxis->pixelToCoord(event->position().x()));
    if (axisRect()->rect().contains(event->pos()) && key >= 0 && key < static_cast<double>(comparisons_.size()))
        QToolTip::showText(event->globalPosition().toPoint(),
                           ChartStyle::describeComparison(comparisons_[static_cast<std::size_t>(key)]), this);
    else
        QToolTip::hideText();
}

}  // namespace zkdv::ui
