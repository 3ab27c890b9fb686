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

// Sorts `verdicts` by index and fills the two graphs with them: the worst comparison's max ULP
// and relative L2 error per transaction.
void fillGraphs(std::vector<VerdictPoint>& verdicts, QCPGraph* maxUlp, QCPGraph* relativeL2)
{
    std::sort(verdicts.begin(), verdicts.end(), [](const VerdictPoint& a, const VerdictPoint& b) { return a.index < b.index; });
    QVector<QCPGraphData> ulp, relative;
    ulp.reserve(static_cast<qsizetype>(verdicts.size()));
    relative.reserve(static_cast<qsizetype>(verdicts.size()));
    const double none = std::numeric_limits<double>::quiet_NaN();
    for (const VerdictPoint& point : verdicts) {
        const double key = static_cast<double>(point.index);
        // Unverifiable without a measured difference: no point to draw (not a zero).
        const bool measured = point.verdict != Verdict::Unverifiable || point.worstMaxUlp != 0 || point.worstRelativeL2 != 0;
        ulp.append(QCPGraphData(key, measured ? ChartStyle::onLogAxis(point.worstMaxUlp, ChartStyle::kUlpFloor) : none));
        relative.append(QCPGraphData(key, measured ? ChartStyle::onLogAxis(point.worstRelativeL2, ChartStyle::kRelativeL2Floor) : none));
    }
    maxUlp->data()->set(ulp, true);
    relativeL2->data()->set(relative, true);
}

const VerdictPoint* verdictOf(const std::vector<VerdictPoint>& verdicts, quint64 index)
{
    auto it = std::lower_bound(verdicts.begin(), verdicts.end(), index,
                               [](const VerdictPoint& point, quint64 wanted) { return point.index < wanted; });
    return it != verdicts.end() && it->index == index ? &*it : nullptr;
}

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
    // The comparison run: hollow shapes in other colours, seen around the shown run's points
    // where both runs measured the same.
    comparisonMaxUlp_ = addGraph(xAxis, yAxis);
    comparisonMaxUlp_->setLineStyle(QCPGraph::lsNone);
    comparisonMaxUlp_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangle, QColor(0x94, 0x67, 0xbd), 8));
    comparisonRelativeL2_ = addGraph(xAxis, yAxis2);
    comparisonRelativeL2_->setLineStyle(QCPGraph::lsNone);
    comparisonRelativeL2_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssSquare, QColor(0x8c, 0x56, 0x4b), 7));
    for (QCPGraph* graph : {comparisonMaxUlp_, comparisonRelativeL2_}) {
        graph->setVisible(false);
        graph->removeFromLegend();
    }
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
    fillGraphs(verdicts_, maxUlp_, relativeL2_);
    rescale();
}

void DivergenceChart::setRunName(const QString& name)
{
    runName_ = name;
    nameGraphs();
}

void DivergenceChart::setComparison(const std::vector<VerdictPoint>& verdicts, const QString& name)
{
    comparisonName_ = name;
    comparison_ = name.isEmpty() ? std::vector<VerdictPoint>() : verdicts;
    fillGraphs(comparison_, comparisonMaxUlp_, comparisonRelativeL2_);
    for (QCPGraph* graph : {comparisonMaxUlp_, comparisonRelativeL2_}) {
        graph->setVisible(hasComparison());
        if (hasComparison())
            graph->addToLegend();
        else
            graph->removeFromLegend();
    }
    nameGraphs();
    if (hasComparison())
        ChartStyle::applyDesktopPalette(this);  // the entries just added, in the desktop's colours
    rescale();
}

void DivergenceChart::nameGraphs()
{
    // One run: the legend names the metrics; two: each entry names its run too.
    const QString shown = hasComparison() ? (runName_.isEmpty() ? tr("shown run") : runName_) + QStringLiteral(": ") : QString();
    maxUlp_->setName(shown + tr("max ULP"));
    relativeL2_->setName(shown + tr("relative L2"));
    comparisonMaxUlp_->setName(comparisonName_ + QStringLiteral(": ") + tr("max ULP"));
    comparisonRelativeL2_->setName(comparisonName_ + QStringLiteral(": ") + tr("relative L2"));
}

void DivergenceChart::setTransactionCount(quint64 count)
{
    transactionCount_ = count;
    rescale();
}

void DivergenceChart::rescale()
{
    const bool any = !verdicts_.empty() || !comparison_.empty();
    if (transactionCount_ > 0) {
        xAxis->setRange(-0.5, static_cast<double>(transactionCount_) - 0.5);
    } else if (any) {
        std::uint64_t lower = std::numeric_limits<std::uint64_t>::max(), upper = 0;
        for (const std::vector<VerdictPoint>* run : {&verdicts_, &comparison_})
            if (!run->empty()) {
                lower = std::min(lower, run->front().index);
                upper = std::max(upper, run->back().index);
            }
        xAxis->setRange(static_cast<double>(lower) - 0.5, static_cast<double>(upper) + 0.5);
    }
    if (!any)
        return;
    // The values of both runs, where a comparison is drawn.
    const auto valueRange = [](QCPGraph* shown, QCPGraph* compared, bool* found) {
        bool foundShown = false, foundCompared = false;
        QCPRange range = shown->data()->valueRange(foundShown, QCP::sdPositive);
        const QCPRange other = compared->visible() ? compared->data()->valueRange(foundCompared, QCP::sdPositive) : QCPRange();
        if (foundCompared) {
            if (foundShown)
                range.expand(other);
            else
                range = other;
        }
        *found = foundShown || foundCompared;
        return range;
    };
    // Each value axis reaches above its tolerance line, so the line is seen against the points.
    const auto above = [](double tolerance) { return tolerance > 0 && std::isfinite(tolerance) ? tolerance * 4 : 0.0; };
    bool found = false;
    const QCPRange ulp = valueRange(maxUlp_, comparisonMaxUlp_, &found);
    if (found)
        yAxis->setRange(ChartStyle::kUlpFloor / 2, std::max({ulp.upper * 4, 8.0, above(tolerance_.first)}));
    const QCPRange relative = valueRange(relativeL2_, comparisonRelativeL2_, &found);
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
    clearComparison();
    setSelectedTransaction(std::nullopt);
    xAxis->setRange(0, 1);
}

std::optional<quint64> DivergenceChart::transactionAt(const QPointF& pos) const
{
    double best = kPointRadius;
    std::optional<quint64> found;
    for (QCPGraph* graph : {maxUlp_, relativeL2_, comparisonMaxUlp_, comparisonRelativeL2_}) {
        if (!graph->visible())
            continue;
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
    const auto describe = [](const VerdictPoint& point) {
        return tr("verdict %1\nmax ULP %2\nrelative L2 %3%4")
            .arg(VerdictPalette::label(point.verdict), ChartStyle::formatValue(point.worstMaxUlp),
                 ChartStyle::formatValue(point.worstRelativeL2), point.selected ? QString() : tr("\n(replayed as a prefix)"));
    };
    const VerdictPoint* shown = verdictOf(verdicts_, index);
    QString text = tr("transaction %1").arg(index);
    if (!hasComparison())
        return shown ? text + QLatin1Char('\n') + describe(*shown) : text;
    const VerdictPoint* compared = verdictOf(comparison_, index);
    const QString notReplayed = tr("not replayed");
    text += QStringLiteral("\n%1: %2").arg(runName_.isEmpty() ? tr("shown run") : runName_, shown ? describe(*shown).replace(QLatin1Char('\n'), QStringLiteral(", ")) : notReplayed);
    text += QStringLiteral("\n%1: %2").arg(comparisonName_, compared ? describe(*compared).replace(QLatin1Char('\n'), QStringLiteral(", ")) : notReplayed);
    return text;
}

}  // namespace zkdv::ui
