// What every chart lets its user do (ChartTools): x-only zoom that stays within the data while
// y follows the data in view, reset by double-click and by Home, export as PNG, SVG and CSV
// read back, PNG at a chosen size with a title and a footer (and the chart on screen left as it
// was), the export dialog, the loss's log/linear toggle, and log-axis tick labels that say
// different things.

#include <QAction>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QSpinBox>
#include <QSettings>
#include <QStandardPaths>
#include <QXmlStreamReader>
#include <QtTest>

#include <cmath>
#include <set>
#include <tuple>

#include <qcustomplot.h>

#include "image_ink.h"
#include "plots/chart_image_dialog.h"
#include "plots/chart_style.h"
#include "plots/chart_tools.h"
#include "plots/divergence_chart.h"
#include "plots/transaction_chart.h"
#include "temp_dir.h"

using zkdv::test::darkPixels;
using zkdv::ui::ChartImageDialog;
using zkdv::ui::ChartImageOptions;
using zkdv::ui::ChartStyle;
using zkdv::ui::ChartTools;
using zkdv::ui::TransactionChart;

namespace {

constexpr int kPoints = 200;

// A falling loss with a bump in the middle, so that the values in view depend on the x range.
double lossAt(int i) { return 2.0 * std::exp(-i / 60.0) + (i >= 90 && i < 110 ? 1.0 : 0.0) + 0.05; }

std::unique_ptr<TransactionChart> makeChart()
{
    auto chart = std::make_unique<TransactionChart>();
    chart->resize(800, 500);
    auto loss = QSharedPointer<QCPGraphDataContainer>::create();
    auto norm = QSharedPointer<QCPGraphDataContainer>::create();
    for (int i = 0; i < kPoints; ++i) {
        loss->add(QCPGraphData(i, lossAt(i)));
        norm->add(QCPGraphData(i, 1e-3 * (1 + i % 7)));
    }
    chart->setSeries(loss, {QStringLiteral("weight")}, 1, {norm});
    chart->replot();
    return chart;
}

// The loss values among the keys in view, as ChartTools sees them.
QCPRange visibleLoss(const TransactionChart& chart)
{
    bool found = false;
    return chart.lossGraph()->getValueRange(found, QCP::sdBoth, chart.xAxis->range());
}

// 50 transactions of a model of 16 layers: a legend that must wrap into columns.
void setSixteenLayers(TransactionChart& chart)
{
    auto loss = QSharedPointer<QCPGraphDataContainer>::create();
    QVector<QSharedPointer<QCPGraphDataContainer>> norms;
    QStringList names;
    for (int i = 0; i < 50; ++i)
        loss->add(QCPGraphData(i, lossAt(i)));
    for (int p = 0; p < 16; ++p) {
        names << QStringLiteral("layer%1.weight").arg(p);
        norms << QSharedPointer<QCPGraphDataContainer>::create();
        for (int i = 0; i < 50; ++i)
            norms.back()->add(QCPGraphData(i, 1e-3 * (p + 1)));
    }
    chart.setSeries(loss, names, 16, norms);
}

// What the chart on screen is made of and where: unchanged by an export.
QStringList layoutOf(TransactionChart& chart)
{
    QStringList parts;
    const auto rect = [](const QRect& r) { return QStringLiteral("%1,%2 %3x%4").arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height()); };
    parts << QStringLiteral("elements %1, items %2, plottables %3, layers %4, legend items %5")
                 .arg(chart.plotLayout()->elements(true).size())
                 .arg(chart.itemCount())
                 .arg(chart.plottableCount())
                 .arg(chart.layerCount())
                 .arg(chart.legend->itemCount());
    parts << QStringLiteral("grid %1x%2").arg(chart.plotLayout()->rowCount()).arg(chart.plotLayout()->columnCount());
    for (QCPLayoutElement* element : chart.plotLayout()->elements(true))
        if (element) {
            parts << QString::fromLatin1(element->metaObject()->className()) + QLatin1Char(' ') + rect(element->outerRect());
            if (auto* legend = qobject_cast<QCPLegend*>(element))
                parts << QStringLiteral("legend wrap %1").arg(legend->wrap());
        }
    parts << QStringLiteral("x %1..%2 y %3..%4").arg(chart.xAxis->range().lower).arg(chart.xAxis->range().upper)
                 .arg(chart.yAxis->range().lower).arg(chart.yAxis->range().upper);
    return parts;
}

QWheelEvent wheel(const QWidget& widget, QPointF at, int notches)
{
    return QWheelEvent(at, widget.mapToGlobal(at), QPoint(), QPoint(0, 120 * notches), Qt::NoButton, Qt::NoModifier,
                       Qt::NoScrollPhase, false);
}

}  // namespace

class TestChartTools : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void wheelZoomsTheTransactionsOnlyAndYFollows();
    void zoomNeverGoesPastTheData();
    void doubleClickAndHomeResetTheZoom();
    void exportsReadBack();
    void exportToAnUnwritablePlaceSaysWhy();
    void pngAtAChosenSizeHasTitleAndFooter();
    void pngExportLeavesTheChartOnScreenAsItWas();
    void pngSizeOutOfBoundsIsRefused();
    void imageDialogProposesAndReturns();
    void lossAxisTogglesBetweenLinearAndLog();
    void contextMenuOffersEveryAction();
    void logAxisTickLabelsDiffer();
    void divergenceChartDrawsTheTolerance();
    void legendsNeverCoverDataNorCutEntries();
    void chartsFollowADarkDesktopPalette();

private:
    zkdv::test::TempDir dir_;
};

void TestChartTools::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true);
    QSettings().remove(QStringLiteral("charts"));
}

void TestChartTools::wheelZoomsTheTransactionsOnlyAndYFollows()
{
    auto chart = makeChart();
    const QCPRange fullX = chart->xAxis->range();
    const QPointF centre = chart->lossRect()->rect().center();
    QWheelEvent in = wheel(*chart, centre, 3);
    QApplication::sendEvent(chart.get(), &in);
    const QCPRange zoomedX = chart->xAxis->range();
    QVERIFY2(zoomedX.size() < fullX.size() * 0.7, qPrintable(QStringLiteral("%1 -> %2").arg(fullX.size()).arg(zoomedX.size())));
    // The other rectangle shares the transaction axis.
    QCOMPARE(chart->normRect()->axis(QCPAxis::atBottom)->range(), zoomedX);
    // y is not zoomed by the wheel: it spans the loss in view, with a margin of 5 %.
    const QCPRange visible = visibleLoss(*chart);
    const QCPRange y = chart->yAxis->range();
    QVERIFY(y.lower < visible.lower && y.upper > visible.upper);
    QVERIFY2(std::fabs(y.size() - visible.size() * 1.1) < 1e-9 * y.size(), qPrintable(QStringLiteral("%1 vs %2").arg(y.size()).arg(visible.size())));

    // Pan to the end, where the loss is small: y follows down.
    chart->xAxis->setRange(kPoints - 30, kPoints - 1);
    ChartTools::of(chart.get())->fitValues();
    QVERIFY2(chart->yAxis->range().upper < lossAt(kPoints - 31) * 1.1, qPrintable(QString::number(chart->yAxis->range().upper)));
}

void TestChartTools::zoomNeverGoesPastTheData()
{
    auto chart = makeChart();
    chart->resize(800, 500);
    chart->show();
    QVERIFY(QTest::qWaitForWindowExposed(chart.get()));
    ChartTools* tools = ChartTools::of(chart.get());
    for (int i = 0; i < 10; ++i)
        tools->zoomX(chart->lossRect(), 2.0, 0);  // out, far beyond the data
    const QCPRange full = chart->xAxis->range();
    QVERIFY(full.lower <= -0.5 && full.upper >= kPoints - 0.5);
    QCOMPARE(full.lower + full.upper, double(kPoints - 1));  // as much room on either side
    // The outermost markers are whole: their centres at least a marker's radius inside.
    const double left = chart->xAxis->coordToPixel(0) - chart->lossRect()->left();
    const double right = chart->lossRect()->right() - chart->xAxis->coordToPixel(kPoints - 1);
    QVERIFY2(left >= ChartTools::kEdgeMarginPixels - 1 && right >= ChartTools::kEdgeMarginPixels - 1,
             qPrintable(QStringLiteral("%1 %2").arg(left).arg(right)));
    // Zoomed in near the start and then out around a key left of the data: still inside.
    tools->zoomX(chart->lossRect(), 0.1, 5);
    tools->zoomX(chart->lossRect(), 1.5, -1000);
    QVERIFY(chart->xAxis->range().lower >= full.lower - 1e-9);
    QVERIFY(chart->xAxis->range().upper <= full.upper + 1e-9);
}

void TestChartTools::doubleClickAndHomeResetTheZoom()
{
    auto chart = makeChart();
    chart->show();
    QVERIFY(QTest::qWaitForWindowExposed(chart.get()));
    ChartTools* tools = ChartTools::of(chart.get());
    tools->resetZoom();
    const QCPRange full = chart->xAxis->range();
    QVERIFY(full.lower <= -0.5 && full.upper >= kPoints - 0.5);

    tools->zoomX(chart->lossRect(), 0.2, 50);
    QVERIFY(chart->xAxis->range().size() < full.size() / 2);
    // The top-right corner of the loss rectangle is background: the loss falls to the right.
    const QPoint background = chart->lossRect()->rect().topRight() + QPoint(-3, 3);
    QVERIFY(!chart->plottableAt(background, true));
    QTest::mouseDClick(chart.get(), Qt::LeftButton, Qt::NoModifier, background);
    QCOMPARE(chart->xAxis->range(), full);

    tools->zoomX(chart->lossRect(), 0.2, 50);
    QVERIFY(chart->xAxis->range().size() < full.size() / 2);
    chart->activateWindow();
    chart->setFocus();
    QVERIFY(QTest::qWaitForWindowActive(chart.get()));
    QTest::keyClick(chart.get(), Qt::Key_Home);
    QCOMPARE(chart->xAxis->range(), full);
}

void TestChartTools::exportsReadBack()
{
    auto chart = makeChart();
    chart->setAccessibleName(QStringLiteral("Loss, and updates"));
    ChartTools* tools = ChartTools::of(chart.get());
    QString error;

    const QString png = QString::fromStdString(dir_.file("chart.png"));
    QVERIFY2(tools->exportPng(png, &error), qPrintable(error));
    QImage image(png);
    QVERIFY(!image.isNull());
    QCOMPARE(image.size(), chart->size() * chart->devicePixelRatioF());
    // Something is drawn: the loss's pen colour appears in the image.
    const QColor lossColor = chart->lossGraph()->pen().color();
    bool drawn = false;
    for (int y = 0; y < image.height() && !drawn; ++y)
        for (int x = 0; x < image.width() && !drawn; ++x)
            drawn = image.pixelColor(x, y) == lossColor;
    QVERIFY(drawn);

    const QString svg = QString::fromStdString(dir_.file("chart.svg"));
    QVERIFY2(tools->exportSvg(svg, &error), qPrintable(error));
    QFile svgFile(svg);
    QVERIFY(svgFile.open(QIODevice::ReadOnly));
    QXmlStreamReader xml(&svgFile);
    int elements = 0, drawing = 0;
    QString root, title;
    while (!xml.atEnd()) {
        if (xml.readNext() != QXmlStreamReader::StartElement)
            continue;
        if (elements++ == 0)
            root = xml.name().toString();
        if (xml.name() == QLatin1String("title"))
            title = xml.readElementText();
        else if (xml.name() == QLatin1String("path") || xml.name() == QLatin1String("polyline"))
            ++drawing;
    }
    QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
    QCOMPARE(root, QStringLiteral("svg"));
    QCOMPARE(title, QStringLiteral("Loss, and updates"));
    QVERIFY2(drawing > 5, qPrintable(QString::number(drawing)));

    const QString csv = QString::fromStdString(dir_.file("chart.csv"));
    QVERIFY2(tools->exportCsv(csv, &error), qPrintable(error));
    QFile csvFile(csv);
    QVERIFY(csvFile.open(QIODevice::ReadOnly | QIODevice::Text));
    const QStringList lines = QString::fromUtf8(csvFile.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.value(0), QStringLiteral("chart,series,x,y"));
    int lossRows = 0, normRows = 0;
    for (const QString& line : lines.mid(1)) {
        // The chart's name holds a comma, so it is quoted.
        QVERIFY2(line.startsWith(QStringLiteral("\"Loss, and updates\",")), qPrintable(line));
        const QStringList fields = line.mid(QStringLiteral("\"Loss, and updates\",").size()).split(QLatin1Char(','));
        QCOMPARE(fields.size(), 3);
        const int x = fields[1].toInt();
        if (fields[0] == QLatin1String("loss")) {
            QCOMPARE(fields[2].toDouble(), lossAt(x));  // 17 digits: the value itself
            ++lossRows;
        } else if (fields[0] == QLatin1String("weight")) {
            ++normRows;
        }
    }
    QCOMPARE(lossRows, kPoints);
    QCOMPARE(normRows, kPoints);
}

void TestChartTools::exportToAnUnwritablePlaceSaysWhy()
{
    auto chart = makeChart();
    QString error;
    const QString path = QString::fromStdString(dir_.file("no-such-folder")) + QStringLiteral("/chart.csv");
    QVERIFY(!ChartTools::of(chart.get())->exportCsv(path, &error));
    QVERIFY2(error.startsWith(QStringLiteral("cannot write ")) && error.contains(QStringLiteral("chart.csv")), qPrintable(error));
    QVERIFY(!ChartTools::of(chart.get())->exportPng(path, &error));
    QVERIFY(!ChartTools::of(chart.get())->exportSvg(path, &error));
    QVERIFY(!QFileInfo::exists(path));
}

void TestChartTools::pngAtAChosenSizeHasTitleAndFooter()
{
    auto chart = makeChart();
    chart->show();
    QVERIFY(QTest::qWaitForWindowExposed(chart.get()));
    ChartTools* tools = ChartTools::of(chart.get());
    // Without a caption: the chart's name, no footer.
    chart->setAccessibleName(QStringLiteral("Loss and updates"));
    QCOMPARE(tools->imageOptions().title, QStringLiteral("Loss and updates"));
    QCOMPARE(tools->imageOptions().footer, QString());
    tools->setCaption(QStringLiteral("demo.zkdv — Run #5 (cuda:0)"),
                      QStringLiteral("Tape: demo.zkdv (chain head 0123456789abcdef…), tape 1 of the case\nRun: Run #5 · cuda:0 · finished\n"
                                     "Case: /cases/demo.zkaudit"));
    ChartImageOptions options = tools->imageOptions();
    QCOMPARE(options.size, chart->size());
    QCOMPARE(options.title, QStringLiteral("demo.zkdv — Run #5 (cuda:0)"));
    QVERIFY(options.footer.startsWith(QStringLiteral("Tape: demo.zkdv")));

    options.size = QSize(1234, 567);
    const QString png = QString::fromStdString(dir_.file("sized.png"));
    QString error;
    QVERIFY2(tools->exportPng(png, options, &error), qPrintable(error));
    const QImage image(png);
    QCOMPARE(image.size(), QSize(1234, 567));

    // The same chart without a title or footer, for what the bands hold on their own.
    ChartImageOptions bare = options;
    bare.title.clear();
    bare.footer.clear();
    const QImage plain = tools->renderImage(bare, &error);
    QCOMPARE(plain.size(), QSize(1234, 567));
    // The title: text across the middle of the top band, where the bare chart has none.
    const QRect titleBand(1234 / 3, 0, 1234 / 3, 28);
    const int title = darkPixels(image, titleBand);
    QVERIFY2(title > 60 && title > 4 * darkPixels(plain, titleBand) + 20,
             qPrintable(QStringLiteral("%1 vs %2").arg(title).arg(darkPixels(plain, titleBand))));
    // The footer: three lines at the bottom left, below the chart's axis.
    const QRect footerBand(0, 567 - 50, 300, 50);
    const int footer = darkPixels(image, footerBand);
    QVERIFY2(footer > 60 && footer > 2 * darkPixels(plain, footerBand) + 20,
             qPrintable(QStringLiteral("%1 vs %2").arg(footer).arg(darkPixels(plain, footerBand))));
    // The chart itself is between them: its loss line is drawn, and not in the title band.
    const QColor lossColor = chart->lossGraph()->pen().color();
    int top = image.height(), bottom = -1;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x)
            if (image.pixelColor(x, y) == lossColor) {
                top = std::min(top, y);
                bottom = std::max(bottom, y);
            }
    QVERIFY2(top >= 28 && bottom >= 0 && bottom < 567 - 40, qPrintable(QStringLiteral("%1..%2").arg(top).arg(bottom)));
}

void TestChartTools::pngExportLeavesTheChartOnScreenAsItWas()
{
    // Sixteen parameters: a legend that wraps into columns by the height it is laid out in.
    TransactionChart chart;
    chart.resize(760, 300);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    setSixteenLayers(chart);
    chart.replot();
    chart.replot();
    QTest::qWait(50);  // any queued re-wrap done
    ChartTools* tools = ChartTools::of(&chart);
    tools->setCaption(QStringLiteral("A title"), QStringLiteral("A footer\nTwo lines"));
    const QStringList before = layoutOf(chart);
    const QImage screenBefore = chart.grab().toImage();
    ChartImageOptions options = tools->imageOptions();
    // Much taller and narrower than the screen's: another layout, other legend columns.
    options.size = QSize(500, 1600);
    QString error;
    QVERIFY2(tools->exportPng(QString::fromStdString(dir_.file("tall.png")), options, &error), qPrintable(error));
    QCOMPARE(QImage(QString::fromStdString(dir_.file("tall.png"))).size(), QSize(500, 1600));
    QCOMPARE(layoutOf(chart), before);
    QTest::qWait(50);
    QCOMPARE(layoutOf(chart), before);
    QCOMPARE(chart.grab().toImage(), screenBefore);
    // And it still finds points under the mouse where the screen shows them.
    const QPointF point(chart.xAxis->coordToPixel(10), chart.yAxis->coordToPixel(lossAt(10)));
    QCOMPARE(chart.transactionAt(point).value_or(999), quint64(10));
}

void TestChartTools::pngSizeOutOfBoundsIsRefused()
{
    auto chart = makeChart();
    ChartTools* tools = ChartTools::of(chart.get());
    const QString path = QString::fromStdString(dir_.file("refused.png"));
    for (const QSize& size : {QSize(ChartTools::kMinImageSide - 1, 400), QSize(400, ChartTools::kMaxImageSide + 1), QSize(0, 0)}) {
        QString error;
        QVERIFY(!tools->exportPng(path, ChartImageOptions{size, QStringLiteral("t"), QString()}, &error));
        QVERIFY2(error.contains(QStringLiteral("200 to 8000")), qPrintable(error));
        QVERIFY(!QFileInfo::exists(path));
    }
    // A footer so long that the chart would have no room.
    QString error;
    QVERIFY(!tools->exportPng(path, ChartImageOptions{QSize(400, 200), QStringLiteral("t"), QStringLiteral("line\n").repeated(12)}, &error));
    QVERIFY2(error.contains(QStringLiteral("leaves the chart")), qPrintable(error));
    QVERIFY(!QFileInfo::exists(path));
    // The smallest and largest sides allowed are written.
    QVERIFY2(tools->exportPng(path, ChartImageOptions{QSize(ChartTools::kMinImageSide, ChartTools::kMinImageSide), QString(), QString()}, &error),
             qPrintable(error));
    QCOMPARE(QImage(path).size(), QSize(ChartTools::kMinImageSide, ChartTools::kMinImageSide));
}

void TestChartTools::imageDialogProposesAndReturns()
{
    ChartImageDialog dialog(ChartImageOptions{QSize(640, 480), QStringLiteral("demo.zkdv — Run #3 (cpu)"), QStringLiteral("Tape: demo.zkdv")});
    QCOMPARE(dialog.widthBox()->value(), 640);
    QCOMPARE(dialog.heightBox()->value(), 480);
    QCOMPARE(dialog.widthBox()->minimum(), ChartTools::kMinImageSide);
    QCOMPARE(dialog.heightBox()->maximum(), ChartTools::kMaxImageSide);
    QCOMPARE(dialog.titleEdit()->text(), QStringLiteral("demo.zkdv — Run #3 (cpu)"));
    QVERIFY(dialog.findChild<QLabel*>(QStringLiteral("imageFooter"))->text().contains(QStringLiteral("Tape: demo.zkdv")));
    dialog.widthBox()->setValue(2400);
    dialog.heightBox()->setValue(50);  // below the least side: held at it
    dialog.titleEdit()->setText(QStringLiteral("  CPU against GPU "));
    const ChartImageOptions chosen = dialog.options();
    QCOMPARE(chosen.size, QSize(2400, ChartTools::kMinImageSide));
    QCOMPARE(chosen.title, QStringLiteral("CPU against GPU"));
    QCOMPARE(chosen.footer, QStringLiteral("Tape: demo.zkdv"));
}

void TestChartTools::lossAxisTogglesBetweenLinearAndLog()
{
    auto chart = makeChart();
    QVERIFY(!chart->logarithmicLoss());
    chart->setLogarithmicLoss(true);
    QCOMPARE(chart->yAxis->scaleType(), QCPAxis::stLogarithmic);
    // On a log axis the range still spans the loss in view, by a factor below and above.
    const QCPRange visible = visibleLoss(*chart);
    QVERIFY(chart->yAxis->range().lower < visible.lower && chart->yAxis->range().lower > 0);
    QVERIFY(chart->yAxis->range().upper > visible.upper);
    QVERIFY(QSettings().value(QStringLiteral("charts/logarithmicLoss")).toBool());
    // A new chart starts as the last one was left.
    auto next = makeChart();
    QVERIFY(next->logarithmicLoss());
    next->setLogarithmicLoss(false);
    QCOMPARE(next->yAxis->scaleType(), QCPAxis::stLinear);
    QVERIFY(!QSettings().value(QStringLiteral("charts/logarithmicLoss")).toBool());
}

void TestChartTools::contextMenuOffersEveryAction()
{
    auto chart = makeChart();
    QStringList texts;
    for (QAction* action : ChartTools::of(chart.get())->contextMenu()->actions())
        if (!action->isSeparator())
            texts << action->text().remove(QLatin1Char('&'));
    QCOMPARE(texts, QStringList({QStringLiteral("Reset Zoom"), QStringLiteral("Logarithmic Loss Axis"), QStringLiteral("Export Chart as PNG…"),
                                 QStringLiteral("Export Chart as SVG…"), QStringLiteral("Export Chart Data as CSV…")}));
    // Every action has a shortcut, distinct from the others.
    std::set<QString> shortcuts;
    for (QAction* action : ChartTools::of(chart.get())->actions()) {
        QVERIFY2(!action->shortcut().isEmpty(), qPrintable(action->text()));
        shortcuts.insert(action->shortcut().toString());
    }
    QCOMPARE(shortcuts.size(), std::size_t(5));
}

void TestChartTools::logAxisTickLabelsDiffer()
{
    QCustomPlot plot;
    ChartStyle::makeLogAxis(plot.yAxis);
    for (const QCPRange& range : {QCPRange(3.5, 4.4), QCPRange(0.02, 0.03), QCPRange(1e-6, 1)}) {
        QVector<double> ticks;
        QVector<QString> labels;
        plot.yAxis->ticker()->generate(range, QLocale::c(), QLatin1Char('e'), 0, ticks, nullptr, &labels);
        QVERIFY(labels.size() >= 2);
        const std::set<QString> distinct(labels.begin(), labels.end());
        QVERIFY2(distinct.size() == static_cast<std::size_t>(labels.size()), qPrintable(QStringList(labels.begin(), labels.end()).join(QLatin1Char(' '))));
    }
}

void TestChartTools::divergenceChartDrawsTheTolerance()
{
    zkdv::ui::DivergenceChart chart;
    chart.resize(800, 400);
    std::vector<zkdv::VerdictPoint> points;
    for (quint64 i = 0; i < 20; ++i) {
        zkdv::VerdictPoint point;
        point.index = i * 3;
        point.verdict = i % 5 == 0 ? zkdv::Verdict::WithinTolerance : zkdv::Verdict::Exact;
        point.worstMaxUlp = i % 5 == 0 ? 3 : 0;
        point.worstRelativeL2 = i % 5 == 0 ? 1e-9 : 0;
        points.push_back(point);
    }
    chart.setVerdicts(points);
    chart.setTolerance(16, 1e-6);
    for (auto [line, axis, value] : {std::tuple{chart.ulpToleranceLine(), chart.yAxis, 16.0}, std::tuple{chart.relativeToleranceLine(), chart.yAxis2, 1e-6}}) {
        QVERIFY(line->visible());
        QCOMPARE(line->point1->coords().y(), value);
        QCOMPARE(line->point2->coords().y(), value);
        QCOMPARE(line->point1->valueAxis(), axis);
        // The axis reaches above the line, though every point lies below it.
        QVERIFY2(axis->range().upper >= value * 4, qPrintable(QString::number(axis->range().upper)));
    }
    // A run that accepts only exact results has no line to draw.
    chart.setTolerance(0, std::nan(""));
    QVERIFY(!chart.ulpToleranceLine()->visible());
    QVERIFY(!chart.relativeToleranceLine()->visible());
}

void TestChartTools::legendsNeverCoverDataNorCutEntries()
{
    // Sixteen parameters (the most the chart reads) in a short chart (a small window, a large
    // scale factor): each legend lies beside its plot area and shows every entry whole.
    TransactionChart chart;
    chart.resize(700, 180);
    chart.show();  // QCustomPlot lays out in its viewport, which a resize of a hidden widget leaves as it was
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    setSixteenLayers(chart);
    chart.replot();
    chart.replot();  // the legends re-wrap to the height they were laid out in, then lay out again
    const QRect whole(QPoint(0, 0), chart.size());
    int entries = 0;
    for (QCPAxisRect* rect : {chart.lossRect(), chart.normRect()}) {
        QCPLegend* legend = nullptr;
        for (QCPLayoutElement* element : chart.plotLayout()->elements(false))
            if (auto* candidate = qobject_cast<QCPLegend*>(element); candidate && chart.plotLayout()->rowColToIndex(0, 0) >= 0
                && std::abs(candidate->outerRect().center().y() - rect->outerRect().center().y()) < rect->outerRect().height() / 2)
                legend = candidate;
        QVERIFY(legend);
        QVERIFY2(!legend->outerRect().intersects(rect->rect()), "a legend over the plot area");
        int i = 0;
        for (QCPLayoutElement* element : legend->elements(false)) {
            auto* entry = qobject_cast<QCPAbstractLegendItem*>(element);
            if (!entry)
                continue;  // an empty cell of the last column
            const QRect item = entry->outerRect();
            // Whole: inside the widget and the legend, and as tall as its text needs.
            QVERIFY2(whole.contains(item) && legend->outerRect().contains(item) && item.height() >= entry->minimumOuterSizeHint().height(),
                     qPrintable(QStringLiteral("entry %1 at %2,%3 %4x%5 cut: legend %6,%7 %8x%9 (%10 to a column)")
                                    .arg(i).arg(item.x()).arg(item.y()).arg(item.width()).arg(item.height())
                                    .arg(legend->outerRect().x()).arg(legend->outerRect().y()).arg(legend->outerRect().width())
                                    .arg(legend->outerRect().height()).arg(legend->wrap())));
            ++i;
            ++entries;
        }
    }
    QCOMPARE(entries, 4 + 16);  // the verdicts, and every parameter
}

void TestChartTools::chartsFollowADarkDesktopPalette()
{
    auto chart = makeChart();
    QPalette dark;
    dark.setColor(QPalette::Base, QColor(0x20, 0x22, 0x25));
    dark.setColor(QPalette::Window, QColor(0x2b, 0x2d, 0x30));
    dark.setColor(QPalette::WindowText, QColor(0xe8, 0xe8, 0xe8));
    dark.setColor(QPalette::Mid, QColor(0x55, 0x57, 0x5a));
    chart->setPalette(dark);  // as a desktop switching to dark mode does
    for (QCPAxis* axis : {chart->xAxis, chart->yAxis, chart->normRect()->axis(QCPAxis::atLeft)}) {
        QCOMPARE(axis->tickLabelColor(), QColor(0xe8, 0xe8, 0xe8));
        QCOMPARE(axis->basePen().color(), QColor(0xe8, 0xe8, 0xe8));
    }
    QCOMPARE(chart->legend->item(0)->textColor(), QColor(0xe8, 0xe8, 0xe8));
    const QImage image = chart->toPixmap(0, 0, 1.0).toImage();
    // The corner is background, in the palette's base colour, not QCustomPlot's white.
    QCOMPARE(image.pixelColor(1, 1), QColor(0x20, 0x22, 0x25));
    QCOMPARE(image.pixelColor(chart->lossRect()->rect().center() + QPoint(0, chart->lossRect()->rect().height() / 2 - 2)),
             QColor(0x20, 0x22, 0x25));
}

QTEST_MAIN(TestChartTools)
#include "test_chart_tools.moc"
