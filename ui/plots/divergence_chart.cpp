#include "plots/divergence_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>


#include "plots/chart_style.h"
#include "plots/verdict_palette.h"
#include "plots/point_picker.h"

namespace zkdv::ui {

namespace {

constexpr double kPointRadius = 8.0;

// A horizontal line at value `at` of `valueAxis`, across the plot, and its label at the right.
QCPItemStraightLine* toleranceLine(QCustomPlot* plot, QCPAxis* valueAxis, const QColor& color, QCPItemText** label)
{
    auto* line = new QCPItemStraightLine(plot);
    for (QCPItemPosition* point : {line->point1, line->point2}) {
        point->setAxes(plot->xAxis, valueAxis);
        point->setTypeX(QCPItemPosition::ptAxisRectRatio);
        point->setTypeY(QCPItemPosition::ptPlotCoords);
    }
    line->point1->setCoords(0, 1);
    line->point2->setCoords(1, 1);
    line->setPen(QPen(color, 1, Qt::DashLine));
    line->setSelectable(false);
    line->setVisible(false);
    *label = new QCPItemText(plot);
    (*label)->position->setAxes(plot->xAxis, valueAxis);
    (*label)->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
    (*label)->position->setTypeY(QCPItemPosition::ptPlotCoords);
    (*label)->setPositionAlignment(Qt::AlignRight | Qt::AlignBottom);
    (*label)->setColor(color);
    (*label)->setFont(QFont(plot->font().family(), 7));
    (*label)->setSelectable(false);
    (*label)->setVisible(false);
    return line;
}

}  // namespace

DivergenceChart::DivergenceChart(QWidget* parent) : TransactionPlot(parent)
{
    ChartStyle::applyInteractions(this);
    xAxis->setLabel(tr("replayed transaction"));
    yAxis->setLabel(tr("max ULP distance (0 drawn at %1)").arg(ChartStyle::kUlpFloor));
    yAxis2->setLabel(tr("relative L2 error (0 drawn at %1)").arg(ChartStyle::kRelativeL2Floor));
    yAxis2->setVisible(true);
    ChartStyle::makeLogAxis(yAxis);
    ChartStyle::makeLogAxis(yAxis2);
    yAxis->setRange(ChartStyle::kUlpFloor / 2, 1e3);
    yAxis2->setRange(ChartStyle::kRelativeL2Floor / 2, 1);
    // Both value axes zoom and pan with the mouse.
    axisRect()->setRangeDragAxes({xAxis}, {yAxis, yAxis2});
    axisRect()->setRangeZoomAxes({xAxis}, {yAxis, yAxis2});

    maxUlp_ = addGraph(xAxis, yAxis);
    maxUlp_->setName(tr("max ULP"));
    maxUlp_->setLineStyle(QCPGraph::lsNone);
    maxUlp_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, QColor(0x1f, 0x77, 0xb4), 5));
    relativeL2_ = addGraph(xAxis, yAxis2);
    relativeL2_->setName(tr("relative L2"));
    relativeL2_->setLineStyle(QCPGraph::lsNone);
    relativeL2_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCross, QColor(0xff, 0x7f, 0x0e), 6));
    legend->setVisible(true);
    legend->setFont(QFont(font().family(), 8));
    ChartStyle::placeLegendBeside(this, legend, axisRect());

    cursor_ = new QCPItemStraightLine(this);
    for (QCPItemPosition* point : {cursor_->point1, cursor_->point2}) {
        point->setTypeX(QCPItemPosition::ptPlotCoords);
        point->setTypeY(QCPItemPosition::ptAxisRectRatio);
    }
    cursor_->point1->setCoords(0, 0);
    cursor_->point2->setCoords(0, 1);
    cursor_->setPen(QPen(QColor(0x33, 0x33, 0x33), 1, Qt::DashLine));
    cursor_->setProperty("zkdvCursor", true);  // drawn in the desktop's text colour
    cursor_->setSelectable(false);
    cursor_->setVisible(false);

    ulpTolerance_ = toleranceLine(this, yAxis, maxUlp_->scatterStyle().pen().color(), &ulpToleranceLabel_);
    relativeTolerance_ = toleranceLine(this, yAxis2, relativeL2_->scatterStyle().pen().color(), &relativeToleranceLabel_);
}

void DivergenceChart::setTolerance(double maxUlp, double relativeL2)
{
    const auto place = [](QCPItemStraightLine* line, QCPItemText* label, double value, double labelX, const QString& text) {
        const bool shown = value > 0 && std::isfinite(value);
        line->setVisible(shown);
        label->setVisible(shown);
        if (!shown)
            return;
        line->point1->setCoords(0, value);
        line->point2->setCoords(1, value);
        label->position->setCoords(labelX, value);
        label->setText(text);
    };
    // The two labels at different places along x, so that equal heights never overlap them.
    place(ulpTolerance_, ulpToleranceLabel_, maxUlp, 0.48, tr("ULP tolerance %1").arg(ChartStyle::formatValue(maxUlp)));
    place(relativeTolerance_, relativeToleranceLabel_, relativeL2, 0.98, tr("relative L2 tolerance %1").arg(ChartStyle::formatValue(relativeL2)));
    tolerance_ = {maxUlp, relativeL2};
    rescale();
}

void DivergenceChart::setVerdicts(const std::vector<VerdictPoint>& verdicts)
{
    verdicts_ = verdicts;
    std::sort(verdicts_.begin(), verdicts_.end(), [](const VerdictPoint& a, const VerdictPoint& b) { return a.index < b.index; });
    QVector<QCPGraphData> ulp, relative;
    ulp.reserve(static_cast<qsizetype>(verdicts_.size()));
    relative.reserve(static_cast<qsizetype>(verdicts_.size()));
    const double none = std::numeric_limits<double>::quiet_NaN();
    for (const VerdictPoint& point : verdicts_) {
        const double key = static_cast<double>(point.index);
        // Unverifiable without a measured difference: no point to draw (not a zero).
        const bool measured = point.verdict != Verdict::Unverifiable || point.worstMaxUlp != 0 || point.worstRelativeL2 != 0;
        ulp.append(QCPGraphData(key, measured ? ChartStyle::onLogAxis(point.worstMaxUlp, ChartStyle::kUlpFloor) : none));
        relative.append(QCPGraphData(key, measured ? ChartStyle::onLogAxis(point.worstRelativeL2, ChartStyle::kRelativeL2Floor) : none));
    }
    maxUlp_->data()->set(ulp, true);
    relativeL2_->data()->set(relative, true);
    rescale();
}

void DivergenceChart::setTransactionCount(quint64 count)
{
    transactionCount_ = count;
    rescale();
}

void DivergenceChart::rescale()
{
    if (transactionCount_ > 0)
        xAxis->setRange(-0.5, static_cast<double>(transactionCount_) - 0.5);
    else if (!verdicts_.empty())
        xAxis->setRange(static_cast<double>(verdicts_.front().index) - 0.5, static_cast<double>(verdicts_.back().index) + 0.5);
    if (verdicts_.empty())
        return;
    // Each value axis reaches above its tolerance line, so the line is seen against the points.
    const auto above = [](double tolerance) { return tolerance > 0 && std::isfinite(tolerance) ? tolerance * 4 : 0.0; };
    bool found = false;
    const QCPRange ulp = maxUlp_->data()->valueRange(found, QCP::sdPositive);
    if (found)
        yAxis->setRange(ChartStyle::kUlpFloor / 2, std::max({ulp.upper * 4, 8.0, above(tolerance_.first)}));
    const QCPRange relative = relativeL2_->data()->valueRange(found, QCP::sdPositive);
    if (found)
        yAxis2->setRange(std::min(relative.lower / 4, ChartStyle::kRelativeL2Floor / 2),
                         std::max({relative.upper * 4, 1e-6, above(tolerance_.second)}));
}

void DivergenceChart::setSelectedTransaction(std::optional<quint64> index)
{
    cursor_->setVisible(index.has_value());
    if (index) {
        cursor_->point1->setCoords(static_cast<double>(*index), 0);
        cursor_->point2->setCoords(static_cast<double>(*index), 1);
    }
}

void DivergenceChart::clear()
{
    transactionCount_ = 0;
    setTolerance(std::nan(""), std::nan(""));
    setVerdicts({});
    setSelectedTransaction(std::nullopt);
    xAxis->setRange(0, 1);
}

std::optional<quint64> DivergenceChart::transactionAt(const QPointF& pos) const
{
    double best = kPointRadius;
    std::optional<quint64> found;
    for (QCPGraph* graph : {maxUlp_, relativeL2_}) {
        double distance = 0;
        const int at = PointPicker::nearestOnScreen(*graph, pos, kPointRadius, &distance);
        if (at >= 0 && distance <= best) {
            best = distance;
            found = static_cast<quint64>((graph->data()->constBegin() + at)->key);
        }
    }
    return found;
}

QString DivergenceChart::tooltipFor(quint64 index) const
{
    auto it = std::lower_bound(verdicts_.begin(), verdicts_.end(), index,
                               [](const VerdictPoint& point, quint64 wanted) { return point.index < wanted; });
    if (it == verdicts_.end() || it->index != index)
        return tr("transaction %1").arg(index);
    return tr("transaction %1\nverdict %2\nmax ULP %3\nrelative L2 %4%5")
        .arg(index)
        .arg(VerdictPalette::label(it->verdict), ChartStyle::formatValue(it->worstMaxUlp),
             ChartStyle::formatValue(it->worstRelativeL2), it->selected ? QString() : tr("\n(replayed as a prefix)"));
}

}  // namespace zkdv::ui
