#include "plots/transaction_chart.h"

#include <algorithm>
#include <cmath>


#include <QAction>
#include <QSettings>

#include "plots/chart_style.h"
#include "plots/verdict_palette.h"
#include "plots/chart_tools.h"
#include "plots/point_picker.h"

namespace zkdv::ui {

namespace {

constexpr double kMarkerRadius = 8.0;  // pixels within which the mouse means a marker

const std::array<Verdict, 4> kVerdicts = {Verdict::Exact, Verdict::WithinTolerance, Verdict::Diverged, Verdict::Unverifiable};

QColor parameterColor(int position)
{
    static const QColor palette[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x94, 0x67, 0xbd),
                                     QColor(0x8c, 0x56, 0x4b), QColor(0xe3, 0x77, 0xc2), QColor(0x17, 0xbe, 0xcf),
                                     QColor(0xbc, 0xbd, 0x22), QColor(0x7f, 0x7f, 0x7f)};
    return palette[position % static_cast<int>(std::size(palette))];
}

QPixmap markerPixmap(const QColor& color, qreal ratio)
{
    constexpr int kDiameter = 8;
    QPixmap pixmap(QSize(kDiameter, kDiameter) * ratio);
    pixmap.setDevicePixelRatio(ratio);
    pixmap.fill(Qt::transparent);
    QPainter painter(&pixmap);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setPen(QPen(color.darker(140), 1));
    painter.setBrush(color);
    painter.drawEllipse(QRectF(0.5, 0.5, kDiameter - 1, kDiameter - 1));
    return pixmap;
}

QCPItemStraightLine* makeCursor(QCustomPlot* plot, QCPAxisRect* rect)
{
    auto* line = new QCPItemStraightLine(plot);
    line->setClipAxisRect(rect);
    for (QCPItemPosition* point : {line->point1, line->point2}) {
        point->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
        point->setAxisRect(rect);
        point->setTypeX(QCPItemPosition::ptPlotCoords);
        point->setTypeY(QCPItemPosition::ptAxisRectRatio);
    }
    line->point1->setCoords(0, 0);
    line->point2->setCoords(0, 1);
    line->setPen(QPen(QColor(0x33, 0x33, 0x33), 1, Qt::DashLine));
    line->setProperty("zkdvCursor", true);  // drawn in the desktop's text colour
    line->setSelectable(false);
    line->setVisible(false);
    return line;
}

}  // namespace

TransactionChart::TransactionChart(QWidget* parent) : TransactionPlot(parent)
{
    ChartStyle::applyInteractions(this);
    setAutoAddPlottableToLegend(false);

    QCPAxisRect* top = axisRect(0);
    normRect_ = new QCPAxisRect(this);
    plotLayout()->addElement(1, 0, normRect_);
    margins_ = new QCPMarginGroup(this);
    top->setMarginGroup(QCP::msLeft | QCP::msRight, margins_);
    normRect_->setMarginGroup(QCP::msLeft | QCP::msRight, margins_);
    for (QCPAxisRect* rect : {top, normRect_}) {
        rect->setRangeDrag(Qt::Horizontal);  // y follows the data in view (ChartTools)
        rect->setRangeZoom(Qt::Horizontal);
        rect->setRangeDragAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
        rect->setRangeZoomAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
    }
    QCPAxis* normX = normRect_->axis(QCPAxis::atBottom);
    QCPAxis* normY = normRect_->axis(QCPAxis::atLeft);
    // One transaction axis: panning or zooming either rectangle moves both.
    connect(xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), normX, qOverload<const QCPRange&>(&QCPAxis::setRange));
    connect(normX, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), xAxis, qOverload<const QCPRange&>(&QCPAxis::setRange));

    xAxis->setLabel(tr("transaction"));
    yAxis->setLabel(tr("loss"));
    normX->setLabel(tr("transaction"));
    normY->setLabel(tr("update L2 norm"));
    ChartStyle::makeLogAxis(normY);
    normY->setRange(1e-6, 1);

    loss_ = addGraph(xAxis, yAxis);
    loss_->setName(tr("loss"));
    // A cosmetic 1 px pen without antialiasing: a million points reduce to a dense band of
    // vertical strokes, and antialiasing them costs several times the rest of a replot.
    loss_->setPen(QPen(QColor(0x1f, 0x3a, 0x93), 0));
    loss_->setAntialiased(false);
    loss_->setAdaptiveSampling(true);
    for (Verdict verdict : kVerdicts) {
        QCPGraph* graph = addGraph(xAxis, yAxis);
        graph->setName(VerdictPalette::label(verdict));
        graph->setLineStyle(QCPGraph::lsNone);
        const QColor color = VerdictPalette::color(verdict);
        // A disc drawn once into a pixmap: blitting it is several times cheaper than an
        // antialiased ellipse per marker, which thousands of markers would feel.
        graph->setScatterStyle(QCPScatterStyle(markerPixmap(color, devicePixelRatioF())));
        graph->setPen(QPen(color));
        graph->addToLegend();
        markers_[static_cast<std::size_t>(verdict)] = graph;
    }
    legend->setVisible(true);
    legend->setFont(QFont(font().family(), 8));
    ChartStyle::placeLegendBeside(this, legend, top);
    normLegend_ = new QCPLegend;
    plotLayout()->addElement(1, 1, normLegend_);  // gives it the plot, which setLayer needs
    normLegend_->setLayer(QStringLiteral("legend"));
    normLegend_->setFont(legend->font());
    ChartStyle::placeLegendBeside(this, normLegend_, normRect_);
    normLegend_->setVisible(false);  // until there are norms to name

    lossCursor_ = makeCursor(this, top);
    normCursor_ = makeCursor(this, normRect_);

    logLoss_ = new QAction(tr("&Logarithmic Loss Axis"), this);
    logLoss_->setCheckable(true);
    logLoss_->setShortcut(QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_L));
    logLoss_->setToolTip(tr("Draw the loss on a log scale (losses of 0 or below are then not drawn)"));
    connect(logLoss_, &QAction::toggled, this, &TransactionChart::setLogarithmicLoss);
    ChartTools::of(this)->addChartAction(logLoss_);
    logLoss_->setChecked(QSettings().value(QStringLiteral("charts/logarithmicLoss"), false).toBool());
}

void TransactionChart::setLogarithmicLoss(bool logarithmic)
{
    if (logLoss_->isChecked() != logarithmic) {
        logLoss_->setChecked(logarithmic);  // comes back here through toggled
        return;
    }
    QSettings().setValue(QStringLiteral("charts/logarithmicLoss"), logarithmic);
    if (logarithmic) {
        ChartStyle::makeLogAxis(yAxis);
    } else {
        yAxis->setScaleType(QCPAxis::stLinear);
        yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        yAxis->setNumberFormat(QStringLiteral("gbd"));
        yAxis->setNumberPrecision(6);
    }
    ChartTools::of(this)->fitValues();
}

bool TransactionChart::logarithmicLoss() const { return yAxis->scaleType() == QCPAxis::stLogarithmic; }

void TransactionChart::setSeries(QSharedPointer<QCPGraphDataContainer> loss, const QStringList& parameterNames,
                                 int parameterCount, const QVector<QSharedPointer<QCPGraphDataContainer>>& updateNorms)
{
    for (QCPGraph* graph : norms_) {
        graph->removeFromLegend(normLegend_);
        removeGraph(graph);
    }
    norms_.clear();

    loss_->setData(loss ? loss : QSharedPointer<QCPGraphDataContainer>::create());
    QCPAxis* normX = normRect_->axis(QCPAxis::atBottom);
    QCPAxis* normY = normRect_->axis(QCPAxis::atLeft);
    for (int p = 0; p < updateNorms.size() && p < parameterNames.size(); ++p)
        norms_.push_back(addSeries(normX, normY, parameterNames[p], p, updateNorms[p], normLegend_));
    normLegend_->setVisible(!norms_.isEmpty());
    // Partial data says so: only the first parameters' norms are read for a large model.
    normY->setLabel(parameterCount > norms_.size()
                        ? tr("update L2 norm (first %1 of %2 parameters)").arg(norms_.size()).arg(parameterCount)
                        : tr("update L2 norm"));

    if (!loss_->data()->isEmpty())
        ChartTools::of(this)->resetZoom();  // the whole data, the outermost markers whole
    bool first = true;
    for (QCPGraph* graph : norms_) {
        graph->rescaleValueAxis(!first, true);
        first = false;
    }
    rebuildMarkers();
}

QCPGraph* TransactionChart::addSeries(QCPAxis* x, QCPAxis* y, const QString& name, int position, QSharedPointer<QCPGraphDataContainer> data,
                                      QCPLegend* into)
{
    QCPGraph* graph = addGraph(x, y);
    graph->setName(name);
    // Cosmetic pens without antialiasing, as the loss's (a million points stay cheap).
    graph->setPen(QPen(parameterColor(position), 0));
    graph->setAntialiased(false);
    graph->setAdaptiveSampling(true);
    graph->setData(data);
    graph->addToLegend(into);
    return graph;
}

void TransactionChart::setScheduledOptions(const QStringList& names, const QVector<QSharedPointer<QCPGraphDataContainer>>& values)
{
    removeScheduleRect();
    if (names.isEmpty() || values.isEmpty())
        return;
    scheduleRect_ = new QCPAxisRect(this);
    plotLayout()->addElement(2, 0, scheduleRect_);
    scheduleRect_->setMarginGroup(QCP::msLeft | QCP::msRight, margins_);
    scheduleRect_->setRangeDrag(Qt::Horizontal);
    scheduleRect_->setRangeZoom(Qt::Horizontal);
    QCPAxis* x = scheduleRect_->axis(QCPAxis::atBottom);
    QCPAxis* y = scheduleRect_->axis(QCPAxis::atLeft);
    scheduleRect_->setRangeDragAxes(x, y);
    scheduleRect_->setRangeZoomAxes(x, y);
    x->setLabel(tr("transaction"));
    y->setLabel(tr("scheduled options"));
    y->setNumberFormat(QStringLiteral("gbd"));
    y->setNumberPrecision(6);
    x->setRange(xAxis->range());
    connect(xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), x, qOverload<const QCPRange&>(&QCPAxis::setRange));
    connect(x, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), xAxis, qOverload<const QCPRange&>(&QCPAxis::setRange));
    scheduleLegend_ = new QCPLegend;
    plotLayout()->addElement(2, 1, scheduleLegend_);
    scheduleLegend_->setLayer(QStringLiteral("legend"));
    scheduleLegend_->setFont(legend->font());
    ChartStyle::placeLegendBeside(this, scheduleLegend_, scheduleRect_);
    for (int s = 0; s < names.size() && s < values.size(); ++s) {
        QCPGraph* graph = addSeries(x, y, names[s], s, values[s], scheduleLegend_);
        graph->setLineStyle(QCPGraph::lsStepLeft);  // a step's value holds until the next step
        scheduled_.push_back(graph);
    }
    ChartTools::of(this)->fitValues();
    scheduleCursor_ = makeCursor(this, scheduleRect_);
    scheduleCursor_->setVisible(lossCursor_->visible());
    scheduleCursor_->point1->setCoords(lossCursor_->point1->coords());
    scheduleCursor_->point2->setCoords(lossCursor_->point2->coords());
}

void TransactionChart::removeScheduleRect()
{
    if (!scheduleRect_)
        return;
    for (QCPGraph* graph : scheduled_) {
        graph->removeFromLegend(scheduleLegend_);
        removeGraph(graph);
    }
    scheduled_.clear();
    removeItem(scheduleCursor_);
    scheduleCursor_ = nullptr;
    plotLayout()->remove(scheduleLegend_);
    scheduleLegend_ = nullptr;
    plotLayout()->remove(scheduleRect_);
    scheduleRect_ = nullptr;
    plotLayout()->simplify();
}

void TransactionChart::setVerdicts(const std::vector<VerdictPoint>& verdicts)
{
    verdicts_ = verdicts;
    std::sort(verdicts_.begin(), verdicts_.end(), [](const VerdictPoint& a, const VerdictPoint& b) { return a.index < b.index; });
    rebuildMarkers();
}

void TransactionChart::rebuildMarkers()
{
    std::array<QVector<QCPGraphData>, 4> points;
    const QCPGraphDataContainer& loss = *loss_->data();
    for (const VerdictPoint& verdict : verdicts_) {
        const double key = static_cast<double>(verdict.index);
        double value = std::numeric_limits<double>::quiet_NaN();
        const int at = PointPicker::nearestByKey(loss, key);
        if (at >= 0 && (loss.constBegin() + at)->key == key)
            value = (loss.constBegin() + at)->value;
        points[static_cast<std::size_t>(verdict.verdict)].append(QCPGraphData(key, value));
    }
    for (std::size_t v = 0; v < points.size(); ++v)
        markers_[v]->data()->set(points[v], true);
}

void TransactionChart::setSelectedTransaction(std::optional<quint64> index)
{
    for (QCPItemStraightLine* line : {lossCursor_, normCursor_, scheduleCursor_}) {
        if (!line)
            continue;
        line->setVisible(index.has_value());
        if (index) {
            line->point1->setCoords(static_cast<double>(*index), 0);
            line->point2->setCoords(static_cast<double>(*index), 1);
        }
    }
}

void TransactionChart::clear()
{
    setSeries({}, {}, 0, {});
    setScheduledOptions({}, {});
    setVerdicts({});
    setSelectedTransaction(std::nullopt);
    xAxis->setRange(0, 1);
    yAxis->setRange(0, 1);
}

int TransactionChart::lossPointCount() const
{
    return loss_->data()->size();
}

int TransactionChart::verdictMarkerCount() const
{
    int count = 0;
    for (QCPGraph* graph : markers_)
        count += graph->data()->size();
    return count;
}

const VerdictPoint* TransactionChart::verdictOf(quint64 index) const
{
    auto it = std::lower_bound(verdicts_.begin(), verdicts_.end(), index,
                               [](const VerdictPoint& point, quint64 wanted) { return point.index < wanted; });
    return it != verdicts_.end() && it->index == index ? &*it : nullptr;
}

std::optional<quint64> TransactionChart::transactionAt(const QPointF& pos) const
{
    QCPAxisRect* rect = axisRectAt(pos);
    if (!rect)
        return std::nullopt;
    if (rect == axisRect(0)) {
        double best = kMarkerRadius;
        std::optional<quint64> marker;
        for (QCPGraph* graph : markers_) {
            double distance = 0;
            const int at = PointPicker::nearestOnScreen(*graph, pos, kMarkerRadius, &distance);
            if (at >= 0 && distance <= best) {
                best = distance;
                marker = static_cast<quint64>((graph->data()->constBegin() + at)->key);
            }
        }
        if (marker)
            return marker;
    }
    const int at = PointPicker::nearestByKey(*loss_->data(), rect->axis(QCPAxis::atBottom)->pixelToCoord(pos.x()));
    if (at < 0)
        return std::nullopt;
    return static_cast<quint64>((loss_->data()->constBegin() + at)->key);
}

QString TransactionChart::tooltipFor(quint64 index) const
{
    QString text = tr("transaction %1").arg(index);
    const QCPGraphDataContainer& loss = *loss_->data();
    const int at = PointPicker::nearestByKey(loss, static_cast<double>(index));
    if (at >= 0 && (loss.constBegin() + at)->key == static_cast<double>(index)) {
        text += tr("\nloss %1").arg(ChartStyle::formatValue((loss.constBegin() + at)->value));
        for (QCPGraph* graph : norms_) {
            if (at >= graph->data()->size())
                continue;
            const auto point = graph->data()->constBegin() + at;
            if (point->key != static_cast<double>(index))
                continue;
            text += tr("\n%1 update %2").arg(graph->name(), ChartStyle::formatValue(point->value));
        }
        for (QCPGraph* graph : scheduled_) {
            if (at >= graph->data()->size())
                continue;
            const auto point = graph->data()->constBegin() + at;
            if (point->key == static_cast<double>(index))
                text += tr("\n%1 %2").arg(graph->name(), ChartStyle::formatValue(point->value));
        }
    }
    if (const VerdictPoint* verdict = verdictOf(index))
        text += tr("\nverdict %1 (max ULP %2, relative L2 %3)")
                    .arg(VerdictPalette::label(verdict->verdict), ChartStyle::formatValue(verdict->worstMaxUlp),
                         ChartStyle::formatValue(verdict->worstRelativeL2));
    else if (!verdicts_.empty())
        text += tr("\nnot replayed in this run");
    return text;
}

}  // namespace zkdv::ui
