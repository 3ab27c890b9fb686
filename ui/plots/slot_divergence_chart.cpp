#include "plots/slot_divergence_chart.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <QToolTip>

#include "plots/chart_style.h"

namespace zkdv::ui {

namespace {

const std::string kStatePrefix = "state/";

QColor slotColor(int position)
{
    static const QColor palette[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x94, 0x67, 0xbd),
                                     QColor(0x17, 0xbe, 0xcf), QColor(0x8c, 0x56, 0x4b), QColor(0xe3, 0x77, 0xc2)};
    return palette[position % static_cast<int>(std::size(palette))];
}

}  // namespace

SlotDivergenceChart::SlotDivergenceChart(QWidget* parent) : QCustomPlot(parent)
{
    title_ = ChartStyle::setUpUlpBarChart(this);
    group_ = new QCPBarsGroup(this);
    group_->setSpacingType(QCPBarsGroup::stAbsolute);
    group_->setSpacing(1);
    legend->setVisible(true);
    legend->setFont(QFont(font().family(), 8));
    ChartStyle::placeLegendBeside(this, legend, axisRect());
}

void SlotDivergenceChart::setComparisons(std::optional<quint64> index, const std::vector<TensorComparison>& comparisons)
{
    for (QCPBars* bars : bars_)
        removePlottable(bars);
    bars_.clear();
    group_->clear();
    tensors_.clear();
    states_.clear();

    std::map<std::string, int> tensorPosition;
    std::map<std::string, QVector<QCPBarsData>> bySlot;  // ordered by slot name
    double largest = 1;
    for (const TensorComparison& comparison : comparisons) {
        if (comparison.slot.compare(0, kStatePrefix.size(), kStatePrefix) != 0)
            continue;
        auto [it, added] = tensorPosition.emplace(comparison.tensor, static_cast<int>(tensors_.size()));
        if (added)
            tensors_.push_back(comparison.tensor);
        const double value = ChartStyle::onLogAxis(comparison.metrics.maxUlp, ChartStyle::kUlpFloor);
        largest = std::max(largest, value);
        bySlot[comparison.slot.substr(kStatePrefix.size())].append(QCPBarsData(it->second, value));
        states_.push_back(comparison);
    }
    const double width = 0.8 / std::max<std::size_t>(1, bySlot.size());
    for (auto& [slot, data] : bySlot) {
        auto* bars = new QCPBars(xAxis, yAxis);
        bars->setName(QString::fromStdString(slot));
        const QColor color = slotColor(bars_.size());
        bars->setPen(QPen(color.darker(130), 0));
        bars->setBrush(color);
        bars->setWidth(width);
        std::sort(data.begin(), data.end(), [](const QCPBarsData& a, const QCPBarsData& b) { return a.key < b.key; });
        bars->data()->set(data, true);
        bars->setBarsGroup(group_);
        bars_.push_back(bars);
    }

    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    for (std::size_t t = 0; t < tensors_.size(); ++t)
        ticker->addTick(static_cast<double>(t), QString::fromStdString(tensors_[t]));
    xAxis->setTicker(ticker);
    xAxis->setRange(-0.6, std::max<double>(1, static_cast<double>(tensors_.size())) - 0.4);
    yAxis->setRange(ChartStyle::kUlpFloor / 2, largest * 4);
    if (!index)
        title_->setText(tr("no transaction selected"));
    else if (states_.empty())
        title_->setText(tr("transaction %1: no optimizer-state comparisons (only a replay reaching a snapshot compares them)").arg(*index));
    else
        title_->setText(tr("transaction %1: optimizer state at the next snapshot").arg(*index));
}

int SlotDivergenceChart::barCount() const
{
    int count = 0;
    for (QCPBars* bars : bars_)
        count += bars->data()->size();
    return count;
}

QStringList SlotDivergenceChart::slotNames() const
{
    QStringList names;
    for (QCPBars* bars : bars_)
        names << bars->name();
    return names;
}

void SlotDivergenceChart::mouseMoveEvent(QMouseEvent* event)
{
    QCustomPlot::mouseMoveEvent(event);
    if (event->buttons() != Qt::NoButton)
        return;
    const double key = std::round(xAxis->pixelToCoord(event->position().x()));
    if (!axisRect()->rect().contains(event->pos()) || key < 0 || key >= static_cast<double>(tensors_.size())) {
        QToolTip::hideText();
        return;
    }
    const std::string& tensor = tensors_[static_cast<std::size_t>(key)];
    QStringList parts;
    for (const TensorComparison& comparison : states_)
        if (comparison.tensor == tensor)
            parts << ChartStyle::describeComparison(comparison);
    QToolTip::showText(event->globalPosition().toPoint(), parts.join(QStringLiteral("\n\n")), this);
}

}  // namespace zkdv::ui
