#include "report/report_charts.h"

#include <QBuffer>
#include <QPixmap>

#include <algorithm>
#include <array>
#include <cmath>

#include <qcustomplot.h>

#include "plots/chart_style.h"
#include "plots/verdict_palette.h"
#include "zkdv/report/audit_report.h"

namespace zkdv::ui {

namespace {

const std::array<Verdict, 4> kVerdicts = {Verdict::Exact, Verdict::WithinTolerance, Verdict::Diverged, Verdict::Unverifiable};

Verdict verdictOf(const ReportTransaction& transaction) { return transaction.verdict; }

std::unique_ptr<QCustomPlot> makePlot()
{
    auto plot = std::make_unique<QCustomPlot>();
    plot->setAttribute(Qt::WA_DontShowOnScreen);
    plot->setAutoAddPlottableToLegend(false);
    plot->legend->setVisible(true);
    plot->legend->setFont(QFont(plot->font().family(), 8));
    plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
    return plot;
}

QCPGraph* addMarkers(QCustomPlot* plot, Verdict verdict, int count)
{
    QCPGraph* graph = plot->addGraph();
    const QColor color = VerdictPalette::color(verdict);
    graph->setName(QStringLiteral("%1 (%2)").arg(VerdictPalette::label(verdict)).arg(count));
    graph->setLineStyle(QCPGraph::lsNone);
    graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, color.darker(130), color, 6));
    graph->setPen(QPen(color));
    graph->addToLegend();
    return graph;
}

void noteWhenEmpty(QCustomPlot* plot, bool empty, const QString& text)
{
    if (!empty)
        return;
    auto* note = new QCPItemText(plot);
    note->position->setType(QCPItemPosition::ptAxisRectRatio);
    note->position->setCoords(0.5, 0.5);
    note->setText(text);
    note->setColor(QColor(0x55, 0x55, 0x55));
}

void padRanges(QCustomPlot* plot)
{
    plot->rescaleAxes();
    plot->xAxis->scaleRange(1.05, plot->xAxis->range().center());
    if (plot->yAxis->scaleType() == QCPAxis::stLogarithmic) {
        const QCPRange r = plot->yAxis->range();
        plot->yAxis->setRange(r.lower / 3.0, r.upper * 3.0);
    } else {
        plot->yAxis->scaleRange(1.1, plot->yAxis->range().center());
    }
}

}  // namespace

std::vector<int> ReportCharts::chartsOf(const ReportData& report)
{
    std::vector<int> charts;
    if (report.runStatus || !report.loss.empty())
        charts.push_back(0);
    if (report.runStatus) {
        charts.push_back(1);
        charts.push_back(2);
    }
    return charts;
}

ReportCharts::ReportCharts(const ReportData& report)
{
    for (int which : chartsOf(report)) {
        if (which == 0)
            addLossChart(report);
        else
            addDivergenceChart(report, which == 1);
    }
}

ReportCharts::ReportCharts(const ReportData& report, int which)
{
    if (which == 0)
        addLossChart(report);
    else if (which == 1 || which == 2)
        addDivergenceChart(report, which == 1);
}

ReportCharts::~ReportCharts() = default;

void ReportCharts::addLossChart(const ReportData& report)
{
    Chart chart;
    chart.title = QObject::tr("Loss over the training run");
    chart.caption = QObject::tr("The loss the tape recorded at every transaction (line); each replayed transaction is a dot "
                                "coloured by its verdict: green exact, amber within tolerance, red diverged, grey unverifiable.");
    chart.plot = makePlot();
    QCustomPlot* plot = chart.plot.get();
    plot->xAxis->setLabel(QObject::tr("transaction"));
    plot->yAxis->setLabel(QObject::tr("loss"));

    // A printed chart is a few thousand device pixels wide: a long tape's loss is drawn as the
    // lowest and highest value of each of kLossBuckets runs of transactions, the same envelope
    // at a fraction of the drawing (the window waits for it: docs/performance.md).
    constexpr std::size_t kLossBuckets = 2000;
    QVector<double> keys, values;
    const std::size_t n = std::min(report.lossIndex.size(), report.loss.size());
    const std::size_t per = n > 4 * kLossBuckets ? (n + kLossBuckets - 1) / kLossBuckets : 1;
    keys.reserve(static_cast<qsizetype>(per == 1 ? n : 2 * kLossBuckets + 2));
    values.reserve(keys.capacity());
    for (std::size_t first = 0; first < n; first += per) {
        const std::size_t end = std::min(n, first + per);
        std::size_t low = first, high = first;
        for (std::size_t i = first; i < end; ++i) {
            if (report.loss[i] < report.loss[low] || std::isnan(report.loss[low]))
                low = i;
            if (report.loss[i] > report.loss[high] || std::isnan(report.loss[high]))
                high = i;
        }
        for (std::size_t i : {std::min(low, high), std::max(low, high)}) {
            if (!keys.isEmpty() && keys.back() == static_cast<double>(report.lossIndex[i]))
                continue;
            keys << static_cast<double>(report.lossIndex[i]);
            values << report.loss[i];
        }
    }
    QCPGraph* loss = plot->addGraph();
    loss->setName(QObject::tr("recorded loss"));
    loss->setPen(QPen(QColor(0x1f, 0x3a, 0x93), 1));
    loss->setAdaptiveSampling(true);
    loss->setData(keys, values, true);
    loss->addToLegend();

    for (Verdict verdict : kVerdicts) {
        QVector<double> x, y;
        for (const ReportTransaction& t : report.transactions)
            if (verdictOf(t) == verdict && std::isfinite(t.loss)) {
                x << static_cast<double>(t.index);
                y << t.loss;
            }
        if (!x.isEmpty())
            addMarkers(plot, verdict, static_cast<int>(x.size()))->setData(x, y, true);
    }
    noteWhenEmpty(plot, keys.isEmpty() && report.transactions.empty(), QObject::tr("The tape holds no losses."));
    padRanges(plot);
    charts_.push_back(std::move(chart));
}

void ReportCharts::addDivergenceChart(const ReportData& report, bool ulp)
{
    Chart chart;
    chart.title = ulp ? QObject::tr("Largest ULP distance per replayed transaction")
                      : QObject::tr("Largest relative L2 error per replayed transaction");
    chart.caption = ulp ? QObject::tr("For each replayed transaction, the largest distance in units in the last place between a "
                                      "replayed and a recorded tensor; bitwise-equal transactions sit on the floor of the log axis.")
                        : QObject::tr("For each replayed transaction, the largest ||replayed − recorded|| / ||recorded|| over its "
                                      "tensors; 0 (bitwise equal) sits on the floor of the log axis.");
    chart.plot = makePlot();
    QCustomPlot* plot = chart.plot.get();
    plot->xAxis->setLabel(QObject::tr("transaction"));
    plot->yAxis->setLabel(ulp ? QObject::tr("max ULP distance") : QObject::tr("relative L2 error"));
    ChartStyle::makeLogAxis(plot->yAxis);
    const double floor = ulp ? ChartStyle::kUlpFloor : ChartStyle::kRelativeL2Floor;
    constexpr double kCeiling = 1e300;  // an infinite relative error (x/0) is drawn at the top

    bool any = false;
    double highest = 0.0;
    for (Verdict verdict : kVerdicts) {
        QVector<double> x, y;
        for (const ReportTransaction& t : report.transactions) {
            if (verdictOf(t) != verdict || t.comparisons.empty())
                continue;
            double worst = 0.0;
            for (const ReportComparison& c : t.comparisons) {
                const double value = ulp ? c.metrics.maxUlp : c.metrics.relativeL2;
                if (!std::isnan(value))
                    worst = std::max(worst, std::min(value, kCeiling));
            }
            x << static_cast<double>(t.index);
            y << ChartStyle::onLogAxis(worst, floor);
            highest = std::max(highest, worst);
        }
        if (!x.isEmpty()) {
            addMarkers(plot, verdict, static_cast<int>(x.size()))->setData(x, y, true);
            any = true;
        }
    }
    noteWhenEmpty(plot, !any, QObject::tr("No replayed transaction has comparisons."));
    padRanges(plot);
    if (!any || highest <= floor) {
        // Nothing above the floor: show the floor at the bottom of a few decades, and say why.
        plot->yAxis->setRange(floor / 3.0, floor * 1e4);
        noteWhenEmpty(plot, any, QObject::tr("Every replayed transaction is bitwise equal to the tape (drawn on the axis floor)."));
    }
    charts_.push_back(std::move(chart));
}

void ReportCharts::draw(int chart, QCPPainter* painter, const QRectF& rect) const
{
    QCustomPlot* plot = charts_[static_cast<std::size_t>(chart)].plot.get();
    painter->save();
    painter->translate(rect.topLeft());
    painter->setClipRect(QRectF(QPointF(0, 0), rect.size()));
    plot->toPainter(painter, qRound(rect.width()), qRound(rect.height()));
    painter->restore();
}

QString ReportCharts::pngDataUri(int chart, int width, int height, double scale) const
{
    QCustomPlot* plot = charts_[static_cast<std::size_t>(chart)].plot.get();
    const QPixmap pixmap = plot->toPixmap(width, height, scale);
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    pixmap.save(&buffer, "PNG");
    return QStringLiteral("data:image/png;base64,") + QString::fromLatin1(bytes.toBase64());
}

}  // namespace zkdv::ui
