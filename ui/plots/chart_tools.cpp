#include "plots/chart_tools.h"

#include <cmath>

#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QSaveFile>
#include <QSettings>
#include <QSvgGenerator>
#include <QTextStream>
#include <QTimer>

#include <qcustomplot.h>

#include "plots/chart_style.h"

namespace zkdv::ui {

namespace {

constexpr double kWheelStep = 0.85;  // the x span one wheel notch keeps
constexpr double kLinearMargin = 0.05;  // of the visible values' span, above and below
constexpr double kLogMargin = 1.6;      // factor below the lowest and above the highest value

QString csvField(const QString& text)
{
    if (!text.contains(QLatin1Char(',')) && !text.contains(QLatin1Char('"')) && !text.contains(QLatin1Char('\n')))
        return text;
    QString quoted = text;
    quoted.replace(QLatin1Char('"'), QStringLiteral("\"\""));
    return QLatin1Char('"') + quoted + QLatin1Char('"');
}

QString csvNumber(double value)
{
    if (std::isnan(value))
        return QStringLiteral("nan");
    return QString::number(value, 'g', 17);
}

bool commit(QSaveFile& file, const QString& path, QString* error)
{
    if (file.commit())
        return true;
    if (error)
        *error = QObject::tr("cannot write %1: %2").arg(QDir::toNativeSeparators(path), file.errorString());
    return false;
}

}  // namespace

ChartTools* ChartTools::of(QCustomPlot* plot)
{
    if (auto* tools = plot->findChild<ChartTools*>(QString(), Qt::FindDirectChildrenOnly))
        return tools;
    return new ChartTools(plot);
}

ChartTools::ChartTools(QCustomPlot* plot) : QObject(plot), plot_(plot)
{
    plot_->installEventFilter(this);
    for (QCPAxisRect* rect : plot_->axisRects()) {
        rect->setRangeZoom(Qt::Horizontal);
        rect->setRangeDrag(Qt::Horizontal);
    }

    auto add = [this](const QString& text, const QKeySequence& shortcut, auto slot) {
        auto* action = new QAction(text, this);
        action->setShortcut(shortcut);
        // Only while this chart has the focus: every chart has the same shortcuts.
        action->setShortcutContext(Qt::WidgetWithChildrenShortcut);
        connect(action, &QAction::triggered, this, slot);
        plot_->addAction(action);
        return action;
    };
    resetAction_ = add(tr("&Reset Zoom"), QKeySequence(Qt::Key_Home), [this] { resetZoom(); });
    exportActions_ << add(tr("Export Chart as &PNG…"), QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_P), [this] { exportDialog(QStringLiteral("png")); })
                   << add(tr("Export Chart as &SVG…"), QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_S), [this] { exportDialog(QStringLiteral("svg")); })
                   << add(tr("Export Chart Data as &CSV…"), QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_C), [this] { exportDialog(QStringLiteral("csv")); });
    plot_->setFocusPolicy(Qt::StrongFocus);
}

void ChartTools::addChartAction(QAction* action)
{
    action->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    plot_->addAction(action);
    chartActions_ << action;
    delete menu_;
    menu_ = nullptr;
}

QList<QAction*> ChartTools::actions() const
{
    return QList<QAction*>() << resetAction_ << exportActions_ << chartActions_;
}

QMenu* ChartTools::contextMenu()
{
    if (!menu_) {
        menu_ = new QMenu(plot_);
        menu_->addAction(resetAction_);
        if (!chartActions_.isEmpty()) {
            menu_->addSeparator();
            menu_->addActions(chartActions_);
        }
        menu_->addSeparator();
        menu_->addActions(exportActions_);
    }
    return menu_;
}

bool ChartTools::dataKeyRange(QCPAxisRect* rect, QCPRange* range) const
{
    bool any = false;
    for (int i = 0; i < plot_->plottableCount(); ++i) {
        QCPAbstractPlottable* plottable = plot_->plottable(i);
        if (!plottable->visible() || !plottable->keyAxis() || plottable->keyAxis()->axisRect() != rect)
            continue;
        bool found = false;
        const QCPRange keys = plottable->getKeyRange(found, QCP::sdBoth);
        if (!found)
            continue;
        if (!any)
            *range = keys;
        else
            range->expand(keys);
        any = true;
    }
    if (any) {
        // Half a transaction (or bar) on either side, and at least the room a marker takes at
        // the whole data's scale: on a million transactions half of one is far below a pixel.
        // (Before the plot is laid out its rectangle has no width to go by.)
        const int width = rect->width() - 2 * kEdgeMarginPixels;
        const double margin = width >= 8 * kEdgeMarginPixels ? std::max(0.5, kEdgeMarginPixels * (range->size() + 1.0) / width) : 0.5;
        range->lower -= margin;
        range->upper += margin;
    }
    return any;
}

void ChartTools::keepInData(QCPAxisRect* rect)
{
    QCPRange data;
    if (!dataKeyRange(rect, &data))
        return;
    QCPAxis* axis = rect->axis(QCPAxis::atBottom);
    QCPRange view = axis->range();
    if (view.size() >= data.size()) {
        view = data;
    } else if (view.lower < data.lower) {
        view = QCPRange(data.lower, data.lower + view.size());
    } else if (view.upper > data.upper) {
        view = QCPRange(data.upper - view.size(), data.upper);
    }
    if (view != axis->range())
        axis->setRange(view);
}

void ChartTools::followData(QCPAxisRect* rect)
{
    const QCPRange keys = rect->axis(QCPAxis::atBottom)->range();
    for (QCPAxis* axis : rect->axes(QCPAxis::atLeft | QCPAxis::atRight)) {
        const bool log = axis->scaleType() == QCPAxis::stLogarithmic;
        bool any = false;
        QCPRange values;
        for (int i = 0; i < plot_->plottableCount(); ++i) {
            QCPAbstractPlottable* plottable = plot_->plottable(i);
            if (!plottable->visible() || plottable->valueAxis() != axis)
                continue;
            bool found = false;
            const QCPRange range = plottable->getValueRange(found, log ? QCP::sdPositive : QCP::sdBoth, keys);
            if (!found)
                continue;
            if (!any)
                values = range;
            else
                values.expand(range);
            any = true;
        }
        if (!any)
            continue;
        if (log) {
            values = QCPRange(values.lower / kLogMargin, values.upper * kLogMargin);
        } else {
            const double margin = values.size() > 0 ? values.size() * kLinearMargin : std::max(std::fabs(values.upper) * kLinearMargin, 1e-12);
            values = QCPRange(values.lower - margin, values.upper + margin);
        }
        axis->setRange(values);
    }
}

void ChartTools::zoomX(QCPAxisRect* rect, double factor, double center)
{
    wholeData_ = false;
    rect->axis(QCPAxis::atBottom)->scaleRange(factor, center);
    keepInData(rect);
    followData(rect);
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ChartTools::resetZoom()
{
    wholeData_ = true;
    for (QCPAxisRect* rect : plot_->axisRects()) {
        QCPRange data;
        if (!dataKeyRange(rect, &data))
            continue;
        rect->axis(QCPAxis::atBottom)->setRange(data);
        followData(rect);
    }
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ChartTools::fitValues()
{
    for (QCPAxisRect* rect : plot_->axisRects())
        followData(rect);
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool ChartTools::eventFilter(QObject* watched, QEvent* event)
{
    if (watched != plot_)
        return false;
    switch (event->type()) {
    case QEvent::Wheel: {
        auto* wheel = static_cast<QWheelEvent*>(event);
        QCPAxisRect* rect = plot_->axisRectAt(wheel->position());
        if (!rect || wheel->angleDelta().y() == 0)
            return true;  // never a vertical zoom, nor one outside the plot area
        const double factor = std::pow(kWheelStep, wheel->angleDelta().y() / 120.0);
        zoomX(rect, factor, rect->axis(QCPAxis::atBottom)->pixelToCoord(wheel->position().x()));
        return true;
    }
    case QEvent::MouseButtonDblClick: {
        auto* mouse = static_cast<QMouseEvent*>(event);
        if (mouse->button() == Qt::LeftButton && !plot_->plottableAt(mouse->position(), true))
            resetZoom();
        return false;
    }
    case QEvent::MouseButtonPress:
        dragging_ = static_cast<QMouseEvent*>(event)->button() == Qt::LeftButton;
        return false;
    case QEvent::Resize:
        // The room kept for the outermost markers is in pixels: recomputed for the new size
        // once QCustomPlot has laid the plot out again.
        if (wholeData_)
            QTimer::singleShot(0, this, [this] {
                if (wholeData_)
                    resetZoom();
            });
        return false;
    case QEvent::MouseMove:
    case QEvent::MouseButtonRelease:
        if (dragging_) {
            if (event->type() == QEvent::MouseButtonRelease)
                dragging_ = false;
            wholeData_ = false;
            // After QCustomPlot has moved the range for this event.
            QTimer::singleShot(0, this, [this] {
                for (QCPAxisRect* rect : plot_->axisRects()) {
                    keepInData(rect);
                    followData(rect);
                }
                plot_->replot(QCustomPlot::rpQueuedReplot);
            });
        }
        return false;
    case QEvent::PaletteChange:
        ChartStyle::applyDesktopPalette(plot_);
        plot_->replot(QCustomPlot::rpQueuedReplot);
        return false;
    case QEvent::Polish:
        // Once the chart is built (its legends, titles and cursors exist) and about to show.
        ChartStyle::applyDesktopPalette(plot_);
        return false;
    case QEvent::ContextMenu:
        contextMenu()->popup(static_cast<QContextMenuEvent*>(event)->globalPos());
        return true;
    default:
        return false;
    }
}

QString ChartTools::chartName() const
{
    return plot_->accessibleName().isEmpty() ? QString::fromLatin1(plot_->metaObject()->className()) : plot_->accessibleName();
}

bool ChartTools::exportPng(const QString& path, QString* error) const
{
    const QPixmap pixmap = plot_->toPixmap(0, 0, plot_->devicePixelRatioF());
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || !pixmap.save(&file, "PNG")) {
        if (error)
            *error = tr("cannot write %1: %2").arg(QDir::toNativeSeparators(path), file.errorString());
        return false;
    }
    return commit(file, path, error);
}

bool ChartTools::exportSvg(const QString& path, QString* error) const
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) {
        if (error)
            *error = tr("cannot write %1: %2").arg(QDir::toNativeSeparators(path), file.errorString());
        return false;
    }
    {
        QSvgGenerator svg;
        svg.setOutputDevice(&file);
        svg.setSize(plot_->size());
        svg.setViewBox(QRect(QPoint(0, 0), plot_->size()));
        svg.setTitle(chartName());
        QCPPainter painter;
        if (!painter.begin(&svg)) {
            if (error)
                *error = tr("cannot draw %1 as SVG").arg(chartName());
            return false;
        }
        plot_->toPainter(&painter, plot_->width(), plot_->height());
        painter.end();
    }
    return commit(file, path, error);
}

QString ChartTools::csv() const
{
    QString text;
    QTextStream out(&text);
    out << "chart,series,x,y\n";
    const QString chart = csvField(chartName());
    for (int i = 0; i < plot_->plottableCount(); ++i) {
        QCPAbstractPlottable* plottable = plot_->plottable(i);
        const QString series = csvField(plottable->name());
        auto rows = [&](const auto& data) {
            for (auto it = data->constBegin(); it != data->constEnd(); ++it)
                out << chart << ',' << series << ',' << csvNumber(it->mainKey()) << ',' << csvNumber(it->mainValue()) << '\n';
        };
        if (auto* graph = qobject_cast<QCPGraph*>(plottable))
            rows(graph->data());
        else if (auto* bars = qobject_cast<QCPBars*>(plottable))
            rows(bars->data());
        else if (auto* curve = qobject_cast<QCPCurve*>(plottable))
            rows(curve->data());
    }
    return text;
}

bool ChartTools::exportCsv(const QString& path, QString* error) const
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) {
        if (error)
            *error = tr("cannot write %1: %2").arg(QDir::toNativeSeparators(path), file.errorString());
        return false;
    }
    file.write(csv().toUtf8());
    return commit(file, path, error);
}

void ChartTools::exportDialog(const QString& format)
{
    QSettings settings;
    const QString folder = settings.value(QStringLiteral("charts/exportFolder")).toString();
    const QString name = chartName().toLower().replace(QLatin1Char(' '), QLatin1Char('-')) + QLatin1Char('.') + format;
    const QString filter = format == QLatin1String("png")   ? tr("PNG image (*.png)")
                           : format == QLatin1String("svg") ? tr("SVG drawing (*.svg)")
                                                            : tr("CSV table (*.csv)");
    QString path = QFileDialog::getSaveFileName(plot_, tr("Export Chart"), QDir(folder).filePath(name), filter);
    if (path.isEmpty())
        return;
    if (QFileInfo(path).suffix().isEmpty())
        path += QLatin1Char('.') + format;
    settings.setValue(QStringLiteral("charts/exportFolder"), QFileInfo(path).absolutePath());
    QString error;
    const bool ok = format == QLatin1String("png")   ? exportPng(path, &error)
                    : format == QLatin1String("svg") ? exportSvg(path, &error)
                                                     : exportCsv(path, &error);
    if (!ok)
        QMessageBox::warning(plot_, tr("Export Chart"), error);
}

}  // namespace zkdv::ui
