#include "plots/chart_tools.h"

#include <cmath>

#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QHash>
#include <QImage>
#include <QMenu>
#include <QMessageBox>
#include <QSaveFile>
#include <QSettings>
#include <QSvgGenerator>
#include <QTextStream>
#include <QTimer>

#include <qcustomplot.h>

#include "plots/chart_image_dialog.h"
#include "plots/chart_style.h"

namespace zkdv::ui {

namespace {

constexpr double kWheelStep = 0.85;  // the x span one wheel notch keeps
constexpr double kLinearMargin = 0.05;  // of the visible values' span, above and below
constexpr double kLogMargin = 1.6;      // factor below the lowest and above the highest value
constexpr int kBandPadding = 8;         // pixels around an exported image's title and footer
constexpr int kMinChartHeight = 100;    // pixels the bands must leave the chart

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

void ChartTools::setCaption(const QString& title, const QString& footer)
{
    title_ = title;
    footer_ = footer;
}

QString ChartTools::captionTitle() const
{
    return title_.isEmpty() ? chartName() : title_;
}

ChartImageOptions ChartTools::imageOptions() const
{
    const QSize size = plot_->size().expandedTo(QSize(kMinImageSide, kMinImageSide)).boundedTo(QSize(kMaxImageSide, kMaxImageSide));
    return ChartImageOptions{size, captionTitle(), footer_};
}

QImage ChartTools::renderImage(const ChartImageOptions& options, QString* error) const
{
    const auto fail = [error](const QString& why) {
        if (error)
            *error = why;
        return QImage();
    };
    const QSize size = options.size;
    if (size.width() < kMinImageSide || size.height() < kMinImageSide || size.width() > kMaxImageSide || size.height() > kMaxImageSide)
        return fail(tr("an image of %1 × %2 pixels: each side must be %3 to %4").arg(size.width()).arg(size.height()).arg(kMinImageSide).arg(kMaxImageSide));
    QImage image(size, QImage::Format_ARGB32_Premultiplied);
    if (image.isNull())
        return fail(tr("no memory for an image of %1 × %2 pixels").arg(size.width()).arg(size.height()));

    const QPalette palette = plot_->palette();
    QFont titleFont = plot_->font();
    titleFont.setPointSizeF(titleFont.pointSizeF() * 1.3);
    titleFont.setBold(true);
    const QFontMetrics titleMetrics(titleFont, &image);
    const QFontMetrics footerMetrics(plot_->font(), &image);
    const QStringList footerLines = options.footer.isEmpty() ? QStringList() : options.footer.split(QLatin1Char('\n'));
    const int titleHeight = options.title.isEmpty() ? 0 : titleMetrics.height() + 2 * kBandPadding;
    const int footerHeight = footerLines.isEmpty() ? 0 : static_cast<int>(footerLines.size()) * footerMetrics.lineSpacing() + 2 * kBandPadding;
    const int chartHeight = size.height() - titleHeight - footerHeight;
    if (chartHeight < kMinChartHeight)
        return fail(tr("an image %1 pixels high leaves the chart %2 pixels under the title and above the footer: at least %3 are needed")
                        .arg(size.height()).arg(chartHeight).arg(kMinChartHeight));

    // Legends re-wrap to the height they are laid out in (ChartStyle::placeLegendBeside) after
    // the layout that measured it: a first pass into a scratch image lays the chart out at the
    // image's size, the second draws it so. Their wraps, as the screen had them, come back after.
    QHash<QCPLegend*, int> wraps;
    for (QCPLayoutElement* element : plot_->plotLayout()->elements(true))
        if (auto* legend = qobject_cast<QCPLegend*>(element))
            wraps.insert(legend, legend->wrap());
    {
        QImage scratch(1, 1, QImage::Format_ARGB32_Premultiplied);
        QCPPainter painter(&scratch);
        plot_->toPainter(&painter, size.width(), chartHeight);
    }

    image.fill(palette.color(QPalette::Base));
    {
        QCPPainter painter(&image);
        painter.setRenderHint(QPainter::Antialiasing);
        painter.setRenderHint(QPainter::TextAntialiasing);
        painter.setPen(palette.color(QPalette::WindowText));
        const int textWidth = size.width() - 2 * kBandPadding;
        if (titleHeight > 0) {
            painter.setFont(titleFont);
            painter.drawText(QRect(kBandPadding, kBandPadding, textWidth, titleMetrics.height()), Qt::AlignCenter,
                             titleMetrics.elidedText(options.title, Qt::ElideRight, textWidth));
        }
        painter.setFont(plot_->font());
        int y = titleHeight + chartHeight + kBandPadding;
        for (const QString& line : footerLines) {
            painter.drawText(QRect(kBandPadding, y, textWidth, footerMetrics.lineSpacing()), Qt::AlignLeft | Qt::AlignVCenter,
                             footerMetrics.elidedText(line, Qt::ElideMiddle, textWidth));
            y += footerMetrics.lineSpacing();
        }
        painter.translate(0, titleHeight);
        painter.setClipRect(QRect(0, 0, size.width(), chartHeight));
        plot_->toPainter(&painter, size.width(), chartHeight);
    }

    // Back to the screen's layout: QCustomPlot finds points and axes under the mouse by it.
    for (auto it = wraps.constBegin(); it != wraps.constEnd(); ++it) {
        it.key()->setWrap(it.value());
        it.key()->setFillOrder(it.key()->fillOrder(), true);
    }
    plot_->replot();
    return image;
}

bool ChartTools::exportPng(const QString& path, const ChartImageOptions& options, QString* error) const
{
    const QImage image = renderImage(options, error);
    if (image.isNull())
        return false;
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || !image.save(&file, "PNG")) {
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
    ChartImageOptions image;
    if (format == QLatin1String("png")) {
        ChartImageDialog dialog(imageOptions(), plot_);
        if (dialog.exec() != QDialog::Accepted)
            return;
        image = dialog.options();
    }
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
    const bool ok = format == QLatin1String("png")   ? exportPng(path, image, &error)
                    : format == QLatin1String("svg") ? exportSvg(path, &error)
                                                     : exportCsv(path, &error);
    if (!ok)
        QMessageBox::warning(plot_, tr("Export Chart"), error);
}

}  // namespace zkdv::ui
