// The workstation's charts against the case they show: point, marker and bar counts equal
// what the case holds (counted with SQL here), the series reader against the replay's own
// fingerprint reader, clicks and selection, refresh as results arrive, clearing, a case
// without runs, unreadable cases, a second run drawn over the shown one (and refused when it is
// of another tape or gone), and the tape, runs and case an exported image names.

#include <QComboBox>
#include <QSignalSpy>
#include <QToolTip>
#include <QtTest>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "image_ink.h"
#include "plots/chart_panel.h"
#include "plots/chart_tools.h"
#include "plots/divergence_chart.h"
#include "plots/slot_divergence_chart.h"
#include "plots/transaction_chart.h"
#include "plots/ulp_histogram_chart.h"
#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/audit/tolerance.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/transaction_series.h"
#include "zkdv/store/transaction_table.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/tape/transaction_record.h"

using namespace zkdv;
using test::darkPixels;
using zkdv::ui::ChartPanel;

namespace {

constexpr std::uint64_t kSteps = 240;
constexpr int kWaitMs = 20000;

TensorComparison comparison(const std::string& tensor, const std::string& slot, Verdict verdict, double maxUlp, double relativeL2,
                            std::uint64_t seed)
{
    TensorComparison c;
    c.tensor = tensor;
    c.slot = slot;
    c.verdict = verdict;
    c.metrics.maxUlp = maxUlp;
    c.metrics.relativeL2 = relativeL2;
    c.metrics.bitwiseEqual = maxUlp == 0;
    // A histogram with counts that differ per comparison, so sums are checked, not shapes.
    c.metrics.ulpHistogram[0] = 10 + seed;
    if (maxUlp > 0)
        c.metrics.ulpHistogram[3] = 1 + seed % 7;
    c.metrics.elements = c.metrics.ulpHistogram[0] + c.metrics.ulpHistogram[3];
    return c;
}

// A replayed transaction with a loss, two deltas and, every other one, two optimizer-state
// slots per parameter.
TransactionOutcome outcome(std::uint64_t index, Verdict verdict, double maxUlp, double relativeL2)
{
    TransactionOutcome o;
    o.index = index;
    o.segment = index / 12;
    o.verdict = verdict;
    o.detail = "test";
    o.comparisons.push_back(comparison("loss", "loss", Verdict::Exact, 0, 0, index));
    o.comparisons.push_back(comparison("weight", "delta", verdict, maxUlp, relativeL2, index + 1));
    o.comparisons.push_back(comparison("bias", "delta", Verdict::Exact, 0, 0, index + 2));
    if (index % 2 == 0) {
        for (const char* slot : {"state/exp_avg", "state/exp_avg_sq"}) {
            o.comparisons.push_back(comparison("weight", slot, verdict, maxUlp * 2, relativeL2, index + 3));
            o.comparisons.push_back(comparison("bias", slot, Verdict::Exact, 0, 0, index + 4));
        }
    }
    return o;
}

std::int64_t storeRun(Database& db, std::int64_t tapeId, const std::vector<TransactionOutcome>& outcomes, bool finish = true,
                      const std::string& tolerance = "", const std::string& device = "cpu")
{
    ReplayStore store(db);
    ReplayRunInfo info;
    info.tapeId = tapeId;
    info.tolerance = tolerance;
    info.device = device;
    info.selection = "ids:test";
    const std::int64_t run = store.beginRun(info);
    store.storeOutcomes(run, outcomes);
    if (finish)
        store.finishRun(run, RunStatus::Finished, "");
    return run;
}

std::int64_t count(Database& db, const std::string& sql)
{
    return db.queryInt64(sql).value_or(-1);
}

quint64 histogramSum(Database& db, const std::string& where)
{
    Statement rows = db.prepare("SELECT ulp_histogram FROM metrics WHERE " + where);
    quint64 total = 0;
    while (rows.step()) {
        const ByteSpan blob = rows.blob(0);
        for (std::size_t at = 0; at + 8 <= blob.size; at += 8) {
            std::uint64_t value;
            std::memcpy(&value, blob.data + at, 8);
            total += value;
        }
    }
    return total;
}

// The text elements (titles) of a chart's layout.
QStringList titlesOf(QCustomPlot* plot)
{
    QStringList titles;
    for (QCPLayoutElement* element : plot->plotLayout()->elements(true))
        if (auto* text = qobject_cast<QCPTextElement*>(element))
            titles << text->text();
    return titles;
}

// The names of the entries of a chart's legend.
QStringList legendNames(QCustomPlot* plot)
{
    QStringList names;
    for (int i = 0; i < plot->legend->itemCount(); ++i)
        if (auto* item = qobject_cast<QCPPlottableLegendItem*>(plot->legend->item(i)))
            names << item->plottable()->name();
    return names;
}

// Waits until every read the panel asked for has been applied.
bool settle(ChartPanel& panel)
{
    QElapsedTimer timer;
    timer.start();
    while (panel.isLoading() && timer.elapsed() < kWaitMs)
        QTest::qWait(10);
    return !panel.isLoading();
}

}  // namespace

class TestCharts : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void seriesMatchesTheFingerprintReader();
    void countsMatchTheCase();
    void scheduledOptionsAreChartedPerGroup();
    void selectionFillsTheTransactionCharts();
    void clickSelectsTheTransaction_data();
    void clickSelectsTheTransaction();
    void refreshShowsArrivingResults();
    void setRunShowsThatRun();
    void runToleranceIsDrawn();
    void emptyPathClearsEveryChart();
    void caseWithoutRuns();
    void unreadableCaseReportsAProblem_data();
    void unreadableCaseReportsAProblem();
    void histogramBinLabels();
    void comparisonRunIsDrawnOverTheShownRun();
    void comparisonIsChosenInThePanel();
    void comparisonRunOfAnotherTapeIsRefused();
    void removedComparisonRunIsCleared();
    void exportedImageNamesTapeRunsAndCase();

private:
    // A copy of the case with a newer run of the same tape on another device ("cuda:0"), and
    // a second tape with a run of its own.
    struct ComparisonCase {
        std::string path;
        std::int64_t gpuRun = 0;
        std::int64_t otherTape = 0;
        std::int64_t otherTapeRun = 0;
    };
    ComparisonCase makeComparisonCase(test::TempDir& dir);


    std::unique_ptr<test::TempDir> dir_;
    std::string casePath_;
    std::string bareCasePath_;  // a tape, no replay runs
    std::int64_t tapeId_ = 0;
    std::int64_t bareTapeId_ = 0;
    std::int64_t olderRun_ = 0;
    std::int64_t run_ = 0;
    std::vector<TransactionOutcome> outcomes_;
};

void TestCharts::initTestCase()
{
    dir_ = std::make_unique<test::TempDir>();
    SyntheticDemoOptions options;
    options.steps = kSteps;
    writeSyntheticDemoTape(dir_->file("demo.zkdv"), options);
    casePath_ = dir_->file("demo.zkaudit");
    bareCasePath_ = dir_->file("bare.zkaudit");
    {
        CaseStore store(bareCasePath_, CaseStore::Access::ReadWrite);
        bareTapeId_ = store.ingestTape(dir_->file("demo.zkdv")).tapeId;
    }
    CaseStore store(casePath_, CaseStore::Access::ReadWrite);
    tapeId_ = store.ingestTape(dir_->file("demo.zkdv")).tapeId;
    olderRun_ = storeRun(store.database(), tapeId_, {outcome(1, Verdict::Exact, 0, 0)});
    outcomes_ = {outcome(5, Verdict::Exact, 0, 0),          outcome(17, Verdict::WithinTolerance, 3, 1e-7),
                 outcome(40, Verdict::Diverged, 4096, 1e-3), outcome(41, Verdict::Unverifiable, 0, 0),
                 outcome(120, Verdict::Diverged, 1e6, 0.5), outcome(200, Verdict::Exact, 0, 0)};
    run_ = storeRun(store.database(), tapeId_, outcomes_, true, "ulp=64,rel=1e-5");
}

void TestCharts::seriesMatchesTheFingerprintReader()
{
    Database db(casePath_, Database::Mode::ReadOnly);
    const TransactionSeries series = loadTransactionSeries(db, tapeId_, 16);
    QCOMPARE(series.indexes.size(), std::size_t(kSteps));
    QCOMPARE(series.losses.size(), std::size_t(kSteps));
    for (std::size_t i = 0; i < series.indexes.size(); ++i)
        QCOMPARE(series.indexes[i], double(i));
    QCOMPARE(series.parameterCount, std::size_t(2));
    QCOMPARE(series.parameterNames.size(), std::size_t(2));

    // The replay's own reader of the same column (top-q selection) must agree.
    const SelectionInput input = ReplayStore(db).selectionInput(tapeId_, true);
    QCOMPARE(input.parameterCount, std::size_t(2));
    for (std::size_t p = 0; p < 2; ++p)
        for (std::size_t i = 0; i < kSteps; ++i)
            QCOMPARE(series.updateNorms[p][i], input.updateL2[i * 2 + p]);

    Statement loss = db.prepare("SELECT loss FROM transactions WHERE tape_id = ?1 AND idx = 77");
    loss.bind(1, tapeId_);
    QVERIFY(loss.step());
    QCOMPARE(series.losses[77], loss.real(0));

    // Fewer parameters asked for than the model has: the count still says how many.
    const TransactionSeries first = loadTransactionSeries(db, tapeId_, 1);
    QCOMPARE(first.parameterNames.size(), std::size_t(1));
    QCOMPARE(first.updateNorms.size(), std::size_t(1));
    QCOMPARE(first.parameterCount, std::size_t(2));

    const std::vector<VerdictPoint> verdicts = loadVerdictPoints(db, run_);
    QCOMPARE(verdicts.size(), outcomes_.size());
    QCOMPARE(verdicts[2].index, quint64(40));
    QCOMPARE(verdicts[2].verdict, Verdict::Diverged);
    QCOMPARE(verdicts[2].worstMaxUlp, 4096.0 * 2);  // the state slot at twice the delta's
    QCOMPARE(newestReplayRun(db, tapeId_).value_or(0), run_);
}

void TestCharts::countsMatchTheCase()
{
    ChartPanel panel;
    QSignalSpy loaded(&panel, &ChartPanel::loaded);
    QSignalSpy problems(&panel, &ChartPanel::problem);
    panel.setCase(QString::fromStdString(casePath_), tapeId_);
    QVERIFY(settle(panel));
    QCOMPARE(loaded.count(), 1);
    QCOMPARE(problems.count(), 0);
    QCOMPARE(panel.runId(), run_);

    Database db(casePath_, Database::Mode::ReadOnly);
    const std::string run = std::to_string(run_);
    QCOMPARE(panel.lossPointCount(), count(db, "SELECT count(*) FROM transactions WHERE tape_id = " + std::to_string(tapeId_)));
    QCOMPARE(panel.verdictMarkerCount(), count(db, "SELECT count(*) FROM verdicts WHERE run_id = " + run));
    QCOMPARE(panel.divergencePointCount(), count(db, "SELECT count(*) FROM verdicts WHERE run_id = " + run));
    // Nothing selected: the histogram is the whole run's.
    QCOMPARE(panel.histogramTotal(), histogramSum(db, "run_id = " + run));
    QVERIFY(panel.histogramTotal() > 0);
    QCOMPARE(panel.tensorBarCount(), 0);
    QCOMPARE(panel.slotBarCount(), 0);

    // Each marker sits on its transaction's loss, in its verdict's graph.
    const ui::TransactionChart* chart = panel.lossPlot();
    QCOMPARE(chart->verdictGraph(Verdict::Diverged)->data()->size(), 2);
    QCOMPARE(chart->verdictGraph(Verdict::Exact)->data()->size(), 2);
    const auto marker = chart->verdictGraph(Verdict::WithinTolerance)->data()->constBegin();
    QCOMPARE(marker->key, 17.0);
    QCOMPARE(marker->value, (chart->lossGraph()->data()->constBegin() + 17)->value);
}

// The golden tape with a schedule (two AdamW groups, CosineAnnealingLR): every group's lr is
// read and charted as the tape's own records hold it, and a tape without a schedule has no
// rectangle for it.
void TestCharts::scheduledOptionsAreChartedPerGroup()
{
    const std::string tape = ZKDV_TEST_DATA_DIR "/golden/mlp-cosine-adamw-1.6.zkdv";
    struct Recorded : TapeVisitor {
        std::vector<std::vector<double>> lrs;  // per transaction, per group
        void onTransaction(const TransactionRecord& record, const RecordLocation&) override
        {
            lrs.push_back(record.optimizerGroupValues("lr"));
        }
    } recorded;
    QCOMPARE(scanTape(tape, &recorded).status, TapeStatus::Sealed);
    QCOMPARE(recorded.lrs.size(), std::size_t(14));

    const std::string casePath = dir_->file("scheduled.zkaudit");
    std::int64_t scheduledTape = 0, plainTape = 0;
    {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        scheduledTape = store.ingestTape(tape).tapeId;
        plainTape = store.ingestTape(dir_->file("demo.zkdv")).tapeId;
    }
    {
        Database db(casePath, Database::Mode::ReadOnly);
        const TransactionSeries series = loadTransactionSeries(db, scheduledTape, 16);
        QCOMPARE(series.scheduledOptions, std::vector<std::string>({"lr"}));
        QCOMPARE(series.groupCount, std::size_t(2));
        QCOMPARE(series.scheduled.size(), std::size_t(2));
        for (std::size_t g = 0; g < 2; ++g) {
            QCOMPARE(series.scheduled[g].size(), recorded.lrs.size());
            for (std::size_t i = 0; i < recorded.lrs.size(); ++i)
                QCOMPARE(series.scheduled[g][i], recorded.lrs[i][g]);
        }
        // The cosine moves the rate: a chart of one constant would prove nothing.
        QVERIFY(series.scheduled[0].front() != series.scheduled[0].back());
        const TransactionSeries plain = loadTransactionSeries(db, plainTape, 16);
        QVERIFY(plain.scheduledOptions.empty());
        QVERIFY(plain.scheduled.empty());
    }

    ChartPanel panel;
    QSignalSpy problems(&panel, &ChartPanel::problem);
    panel.setCase(QString::fromStdString(casePath), scheduledTape);
    QVERIFY(settle(panel));
    QCOMPARE(problems.count(), 0);
    const ui::TransactionChart* chart = panel.lossPlot();
    QVERIFY(chart->scheduleRect() != nullptr);
    QCOMPARE(chart->scheduledGraphs().size(), 2);
    for (int g = 0; g < 2; ++g) {
        const QCPGraph* graph = chart->scheduledGraphs()[g];
        QCOMPARE(graph->name(), QStringLiteral("lr, group %1").arg(g));
        QCOMPARE(graph->data()->size(), static_cast<int>(recorded.lrs.size()));
        int i = 0;
        for (auto point = graph->data()->constBegin(); point != graph->data()->constEnd(); ++point, ++i) {
            QCOMPARE(point->key, double(i));
            QCOMPARE(point->value, recorded.lrs[static_cast<std::size_t>(i)][static_cast<std::size_t>(g)]);
        }
    }
    QVERIFY(chart->plotLayout()->elements(false).contains(chart->scheduleRect()));

    // Another tape of the case, without a schedule: the rectangle goes, the others stay.
    panel.setCase(QString::fromStdString(casePath), plainTape);
    QVERIFY(settle(panel));
    QVERIFY(chart->scheduleRect() == nullptr);
    QVERIFY(chart->scheduledGraphs().isEmpty());
    QCOMPARE(chart->axisRects().size(), 2);
    QCOMPARE(chart->plotLayout()->rowCount(), 2);
    QCOMPARE(panel.lossPointCount(), int(kSteps));
    QCOMPARE(problems.count(), 0);
}

void TestCharts::selectionFillsTheTransactionCharts()
{
    ChartPanel panel;
    panel.setCase(QString::fromStdString(casePath_), tapeId_);
    QVERIFY(settle(panel));
    Database db(casePath_, Database::Mode::ReadOnly);
    const std::string run = std::to_string(run_);
    for (quint64 index : {quint64(40), quint64(17), quint64(6)}) {
        panel.selectTransaction(index);
        const std::string where = "run_id = " + run + " AND idx = " + std::to_string(index);
        QCOMPARE(panel.selectedTransaction().value_or(999), index);
        QCOMPARE(panel.tensorBarCount(), count(db, "SELECT count(*) FROM metrics WHERE " + where));
        QCOMPARE(panel.slotBarCount(), count(db, "SELECT count(*) FROM metrics WHERE " + where + " AND slot LIKE 'state/%'"));
        QCOMPARE(panel.histogramTotal(), histogramSum(db, where));
    }
    panel.selectTransaction(40);
    QCOMPARE(panel.slotBarCount(), 4);
    QCOMPARE(panel.slotPlot()->slotNames(), QStringList({"exp_avg", "exp_avg_sq"}));
    QCOMPARE(panel.tensorBarCount(), 7);
    panel.clearSelection();
    QCOMPARE(panel.tensorBarCount(), 0);
    QCOMPARE(panel.histogramTotal(), histogramSum(db, "run_id = " + run));
}

void TestCharts::clickSelectsTheTransaction_data()
{
    QTest::addColumn<int>("tab");
    QTest::addColumn<quint64>("transaction");
    QTest::newRow("verdict marker") << 0 << quint64(40);
    QTest::newRow("loss line between markers") << 0 << quint64(90);
    QTest::newRow("divergence point") << 1 << quint64(120);
}

void TestCharts::clickSelectsTheTransaction()
{
    QFETCH(int, tab);
    QFETCH(quint64, transaction);
    ChartPanel panel;
    panel.resize(1200, 700);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.setCase(QString::fromStdString(casePath_), tapeId_);
    QVERIFY(settle(panel));
    panel.setCurrentIndex(tab);

    QCustomPlot* plot = tab == 0 ? static_cast<QCustomPlot*>(panel.lossPlot()) : panel.divergencePlot();
    // Zoom in around the transaction so neighbours are pixels apart.
    plot->xAxis->setRange(double(transaction) - 20, double(transaction) + 20);
    plot->replot();
    QCPGraph* graph = tab == 0 ? panel.lossPlot()->lossGraph() : panel.divergencePlot()->maxUlpGraph();
    const auto point = graph->data()->findBegin(double(transaction), false);
    QCOMPARE(point->key, double(transaction));
    const QPoint pixel(qRound(plot->xAxis->coordToPixel(point->key)), qRound(graph->valueAxis()->coordToPixel(point->value)));
    QVERIFY(plot->axisRect()->rect().contains(pixel));

    // Hovering names the transaction (and its verdict, where it has one).
    QMouseEvent hover(QEvent::MouseMove, QPointF(pixel), plot->mapToGlobal(QPointF(pixel)), Qt::NoButton, Qt::NoButton,
                      Qt::NoModifier);
    QApplication::sendEvent(plot, &hover);
    QTRY_VERIFY(QToolTip::text().startsWith(QStringLiteral("transaction %1").arg(transaction)));
    if (transaction != 90)
        QVERIFY2(QToolTip::text().contains("diverged"), qPrintable(QToolTip::text()));

    QSignalSpy clicked(&panel, &ChartPanel::transactionClicked);
    QTest::mouseClick(plot, Qt::LeftButton, Qt::NoModifier, pixel);
    QCOMPARE(clicked.count(), 1);
    QCOMPARE(clicked.first().first().value<quint64>(), transaction);
    QCOMPARE(panel.selectedTransaction().value_or(999), transaction);

    // A drag pans; it selects nothing.
    QTest::mousePress(plot, Qt::LeftButton, Qt::NoModifier, pixel);
    QMouseEvent move(QEvent::MouseMove, QPointF(pixel + QPoint(60, 0)), plot->mapToGlobal(QPointF(pixel + QPoint(60, 0))),
                     Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(plot, &move);
    QTest::mouseRelease(plot, Qt::LeftButton, Qt::NoModifier, pixel + QPoint(60, 0));
    QCOMPARE(clicked.count(), 1);
}

void TestCharts::refreshShowsArrivingResults()
{
    // A run still being written: the panel shows what has landed, then more after refresh().
    test::TempDir dir;
    const std::string path = dir.file("live.zkaudit");
    std::filesystem::copy_file(casePath_, path);
    CaseStore writer(path, CaseStore::Access::ReadWrite);
    const std::int64_t live = storeRun(writer.database(), tapeId_, {outcome(10, Verdict::Exact, 0, 0)}, false);

    ChartPanel panel;
    QSignalSpy loaded(&panel, &ChartPanel::loaded);
    panel.setCase(QString::fromStdString(path), tapeId_);
    QVERIFY(settle(panel));
    QCOMPARE(panel.runId(), live);
    QCOMPARE(panel.verdictMarkerCount(), 1);
    panel.selectTransaction(11);
    QCOMPARE(panel.tensorBarCount(), 0);

    ReplayStore(writer.database()).storeOutcomes(live, {outcome(11, Verdict::Diverged, 9, 1e-4), outcome(12, Verdict::Exact, 0, 0)});
    // A burst of refreshes makes one re-read.
    const int before = loaded.count();
    for (int i = 0; i < 5; ++i)
        panel.refresh();
    QVERIFY(panel.isLoading());
    QVERIFY(settle(panel));
    QCOMPARE(loaded.count(), before + 1);
    QCOMPARE(panel.verdictMarkerCount(), 3);
    QCOMPARE(panel.divergencePointCount(), 3);
    // The selected transaction's comparisons arrived with them.
    QCOMPARE(panel.tensorBarCount(), 3);
}

void TestCharts::setRunShowsThatRun()
{
    ChartPanel panel;
    panel.setCase(QString::fromStdString(casePath_), tapeId_);
    QVERIFY(settle(panel));
    panel.setRun(olderRun_);
    QVERIFY(settle(panel));
    QCOMPARE(panel.runId(), olderRun_);
    QCOMPARE(panel.verdictMarkerCount(), 1);
    QCOMPARE(panel.divergencePointCount(), 1);
    QCOMPARE(panel.lossPointCount(), int(kSteps));
    panel.setRun(0);
    QVERIFY(settle(panel));
    QCOMPARE(panel.runId(), run_);
    QCOMPARE(panel.verdictMarkerCount(), int(outcomes_.size()));

    QSignalSpy problems(&panel, &ChartPanel::problem);
    panel.setRun(run_ + 1000);  // no such run of this tape
    QVERIFY(settle(panel));
    QCOMPARE(problems.count(), 1);
}

void TestCharts::runToleranceIsDrawn()
{
    ChartPanel panel;
    panel.setCase(QString::fromStdString(casePath_), tapeId_);
    QVERIFY(settle(panel));
    zkdv::ui::DivergenceChart* chart = panel.divergencePlot();
    QVERIFY(chart->ulpToleranceLine()->visible());
    QCOMPARE(chart->ulpToleranceLine()->point1->coords().y(), 64.0);
    QCOMPARE(chart->relativeToleranceLine()->point1->coords().y(), 1e-5);
    // The older run was replayed with the default tolerance.
    panel.setRun(olderRun_);
    QVERIFY(settle(panel));
    QCOMPARE(chart->ulpToleranceLine()->point1->coords().y(), Tolerance::defaults().maxUlp);
    QCOMPARE(chart->relativeToleranceLine()->point1->coords().y(), Tolerance::defaults().relativeL2);
    panel.setCase(QString(), 0);
    QVERIFY(!chart->ulpToleranceLine()->visible());
}

void TestCharts::emptyPathClearsEveryChart()
{
    ChartPanel panel;
    panel.setCase(QString::fromStdString(casePath_), tapeId_);
    QVERIFY(settle(panel));
    panel.selectTransaction(40);
    QVERIFY(panel.tensorBarCount() > 0);
    panel.setCase(QString(), 0);
    QVERIFY(!panel.isLoading());
    QCOMPARE(panel.lossPointCount(), 0);
    QCOMPARE(panel.verdictMarkerCount(), 0);
    QCOMPARE(panel.divergencePointCount(), 0);
    QCOMPARE(panel.tensorBarCount(), 0);
    QCOMPARE(panel.slotBarCount(), 0);
    QCOMPARE(panel.histogramTotal(), quint64(0));
    QCOMPARE(panel.runId(), qint64(0));
    QVERIFY(!panel.selectedTransaction());
    // Clearing while a read is in flight drops what it brings: once that read has ended, the
    // charts are still empty. (The read starts when the panel's timer fires; a read that has
    // landed already, or not started, leaves the panel idle after the clear: try again.)
    bool clearedInFlight = false;
    for (int attempt = 0; attempt < 50 && !clearedInFlight; ++attempt) {
        panel.setCase(QString::fromStdString(casePath_), tapeId_);
        QCoreApplication::processEvents();
        panel.setCase(QString(), 0);
        clearedInFlight = panel.isLoading();  // only a read in flight keeps it loading now
        QVERIFY(settle(panel));
        QCOMPARE(panel.lossPointCount(), 0);
        QCOMPARE(panel.verdictMarkerCount(), 0);
        QCOMPARE(panel.divergencePointCount(), 0);
        QCOMPARE(panel.histogramTotal(), quint64(0));
        QCOMPARE(panel.runId(), qint64(0));
    }
    QVERIFY2(clearedInFlight, "no read was in flight when the case was cleared");
}

void TestCharts::caseWithoutRuns()
{
    ChartPanel panel;
    QSignalSpy problems(&panel, &ChartPanel::problem);
    panel.setCase(QString::fromStdString(bareCasePath_), bareTapeId_);
    QVERIFY(settle(panel));
    QCOMPARE(problems.count(), 0);
    QCOMPARE(panel.runId(), qint64(0));
    QCOMPARE(panel.lossPointCount(), int(kSteps));
    QCOMPARE(panel.verdictMarkerCount(), 0);
    QCOMPARE(panel.divergencePointCount(), 0);
    panel.selectTransaction(3);
    QCOMPARE(panel.tensorBarCount(), 0);
    QCOMPARE(panel.slotBarCount(), 0);
    QCOMPARE(panel.histogramTotal(), quint64(0));
    panel.refresh();
    panel.setRun(0);
    QVERIFY(settle(panel));
    panel.resize(800, 500);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    // Each tab, once shown, is drawn and says what it has: nothing replayed yet.
    const std::vector<QStringList> titles = {
        {},
        {},
        {QStringLiteral("transaction 3: no comparisons in this run")},
        {QStringLiteral("transaction 3: no optimizer-state comparisons (only a replay reaching a snapshot compares them)")},
        {QStringLiteral("no replay run")},
    };
    QCOMPARE(panel.count(), int(titles.size()));
    // The first tab is current already: it comes last, when shown again.
    for (int tab : {1, 2, 3, 4, 0}) {
        auto* plot = qobject_cast<QCustomPlot*>(panel.widget(tab));
        QVERIFY(plot);
        QSignalSpy drawn(plot, &QCustomPlot::afterReplot);
        panel.setCurrentIndex(tab);
        QTRY_VERIFY2(drawn.count() >= 1, qPrintable(panel.tabText(tab)));
        QVERIFY(plot->isVisible());
        QCOMPARE(titlesOf(plot), titles[std::size_t(tab)]);
    }
    QCOMPARE(panel.lossPlot()->lossGraph()->data()->size(), int(kSteps));
    QCOMPARE(panel.divergencePlot()->maxUlpGraph()->data()->size(), 0);
    QCOMPARE(problems.count(), 0);
}

void TestCharts::unreadableCaseReportsAProblem_data()
{
    QTest::addColumn<QString>("kind");
    QTest::newRow("missing file") << "missing";
    QTest::newRow("not a database") << "text";
    QTest::newRow("another program's database") << "foreign";
}

void TestCharts::unreadableCaseReportsAProblem()
{
    QFETCH(QString, kind);
    test::TempDir dir;
    const std::string path = dir.file("x.zkaudit");
    if (kind == "text") {
        std::ofstream(path) << std::string(4096, 'x');
    } else if (kind == "foreign") {
        Database db(path, Database::Mode::ReadWriteCreate);
        db.exec("CREATE TABLE notes(text TEXT)");
    }
    ChartPanel panel;
    QSignalSpy problems(&panel, &ChartPanel::problem);
    panel.setCase(QString::fromStdString(path), 1);
    QVERIFY(settle(panel));
    QVERIFY(problems.count() >= 1);
    QCOMPARE(panel.lossPointCount(), 0);
    panel.selectTransaction(1);
    panel.refresh();
    QVERIFY(settle(panel));
    QCOMPARE(panel.tensorBarCount(), 0);
}

void TestCharts::histogramBinLabels()
{
    using ui::UlpHistogramChart;
    QCOMPARE(UlpHistogramChart::binLabel(0), QString("0"));
    QCOMPARE(UlpHistogramChart::binLabel(1), QString("[1, 2)"));
    QCOMPARE(UlpHistogramChart::binLabel(3), QString("[4, 8)"));
    QCOMPARE(UlpHistogramChart::binLabel(12), QString("[2^11, 2^12)"));
    QCOMPARE(UlpHistogramChart::binLabel(64), QString("[2^63, 2^64)"));
}

TestCharts::ComparisonCase TestCharts::makeComparisonCase(test::TempDir& dir)
{
    ComparisonCase made;
    made.path = dir.file("compare.zkaudit");
    std::filesystem::copy_file(casePath_, made.path);
    SyntheticDemoOptions options;
    options.steps = 30;
    options.seed = 11;
    writeSyntheticDemoTape(dir.file("other.zkdv"), options);
    CaseStore store(made.path, CaseStore::Access::ReadWrite);
    made.gpuRun = storeRun(store.database(), tapeId_,
                           {outcome(5, Verdict::Exact, 0, 0), outcome(17, Verdict::Diverged, 70, 1e-4), outcome(40, Verdict::Diverged, 9000, 2e-3),
                            outcome(99, Verdict::WithinTolerance, 2, 1e-8)},
                           true, "", "cuda:0");
    made.otherTape = store.ingestTape(dir.file("other.zkdv")).tapeId;
    made.otherTapeRun = storeRun(store.database(), made.otherTape, {outcome(3, Verdict::Exact, 0, 0)});
    return made;
}

void TestCharts::comparisonRunIsDrawnOverTheShownRun()
{
    test::TempDir dir;
    const ComparisonCase made = makeComparisonCase(dir);
    ChartPanel panel;
    QSignalSpy problems(&panel, &ChartPanel::problem);
    panel.setCase(QString::fromStdString(made.path), tapeId_);
    QVERIFY(settle(panel));
    QCOMPARE(panel.runId(), made.gpuRun);  // the newest
    ui::DivergenceChart* chart = panel.divergencePlot();
    QCOMPARE(legendNames(chart), QStringList({"max ULP", "relative L2"}));

    panel.setComparisonRun(run_);
    QCOMPARE(panel.comparisonRun(), run_);
    QVERIFY(settle(panel));
    QCOMPARE(problems.count(), 0);
    QVERIFY(panel.isComparing());
    Database db(made.path, Database::Mode::ReadOnly);
    const auto verdictCount = [&](std::int64_t run) { return count(db, "SELECT count(*) FROM verdicts WHERE run_id = " + std::to_string(run)); };
    QCOMPARE(panel.divergencePointCount(), verdictCount(made.gpuRun));
    QCOMPARE(panel.comparisonPointCount(), verdictCount(run_));
    QCOMPARE(panel.divergencePointCount(), 4);
    QCOMPARE(panel.comparisonPointCount(), int(outcomes_.size()));
    QVERIFY(chart->comparisonMaxUlpGraph()->visible());
    // Each point of the comparison is the comparison run's, at its transaction.
    QCOMPARE(chart->comparisonMaxUlpGraph()->data()->at(2)->key, 40.0);
    QCOMPARE(chart->comparisonMaxUlpGraph()->data()->at(2)->value, 4096.0 * 2);
    QCOMPARE(chart->maxUlpGraph()->data()->at(2)->value, 9000.0 * 2);
    // Told apart by colour and marker, and named with their devices.
    QVERIFY(chart->maxUlpGraph()->scatterStyle().shape() != chart->comparisonMaxUlpGraph()->scatterStyle().shape());
    QVERIFY(chart->maxUlpGraph()->scatterStyle().pen().color() != chart->comparisonMaxUlpGraph()->scatterStyle().pen().color());
    QVERIFY(chart->relativeL2Graph()->scatterStyle().shape() != chart->comparisonRelativeL2Graph()->scatterStyle().shape());
    const QString gpu = QStringLiteral("Run #%1 (cuda:0)").arg(made.gpuRun), cpu = QStringLiteral("Run #%1 (cpu)").arg(run_);
    QCOMPARE(legendNames(chart), QStringList({gpu + ": max ULP", gpu + ": relative L2", cpu + ": max ULP", cpu + ": relative L2"}));

    // The ULP histogram has the comparison run's beside the shown run's: the whole run's, then
    // the selected transaction's.
    ui::UlpHistogramChart* histogram = panel.histogramPlot();
    QVERIFY(histogram->hasComparison());
    QCOMPARE(histogram->total(), histogramSum(db, "run_id = " + std::to_string(made.gpuRun)));
    QCOMPARE(histogram->comparisonTotal(), histogramSum(db, "run_id = " + std::to_string(run_)));
    QCOMPARE(legendNames(histogram), QStringList({gpu, cpu}));
    panel.selectTransaction(40);
    QCOMPARE(histogram->comparisonTotal(), histogramSum(db, "run_id = " + std::to_string(run_) + " AND idx = 40"));
    QCOMPARE(histogram->total(), histogramSum(db, "run_id = " + std::to_string(made.gpuRun) + " AND idx = 40"));
    panel.clearSelection();

    // The shown run compared with itself adds nothing; showing another run brings it back.
    panel.setRun(run_);
    QVERIFY(settle(panel));
    QVERIFY(!panel.isComparing());
    QCOMPARE(panel.comparisonPointCount(), 0);
    QCOMPARE(legendNames(chart), QStringList({"max ULP", "relative L2"}));
    QVERIFY(!histogram->hasComparison());
    panel.setRun(made.gpuRun);
    QVERIFY(settle(panel));
    QVERIFY(panel.isComparing());
    QCOMPARE(panel.comparisonPointCount(), int(outcomes_.size()));

    // Every run (newest result per transaction) against one run.
    panel.setRun(TransactionTable::kEveryRun);
    QVERIFY(settle(panel));
    QVERIFY(panel.isComparing());
    QCOMPARE(legendNames(chart).first(), QStringLiteral("All runs: max ULP"));

    // Cleared: the comparison's graphs leave the chart and its legend.
    panel.setComparisonRun(0);
    QVERIFY(settle(panel));
    QVERIFY(!panel.isComparing());
    QCOMPARE(panel.comparisonPointCount(), 0);
    QVERIFY(!chart->comparisonMaxUlpGraph()->visible());
    QCOMPARE(legendNames(chart), QStringList({"max ULP", "relative L2"}));
    QVERIFY(!histogram->hasComparison());
    QVERIFY(!histogram->legend->visible());
    QCOMPARE(problems.count(), 0);

    // Another tape: no comparison carried over.
    panel.setComparisonRun(run_);
    QVERIFY(settle(panel));
    QVERIFY(panel.isComparing());
    panel.setCase(QString::fromStdString(made.path), made.otherTape);
    QCOMPARE(panel.comparisonRun(), qint64(0));
    QVERIFY(settle(panel));
    QVERIFY(!panel.isComparing());
    QCOMPARE(panel.comparisonPointCount(), 0);
}

void TestCharts::comparisonIsChosenInThePanel()
{
    test::TempDir dir;
    const ComparisonCase made = makeComparisonCase(dir);
    ChartPanel panel;
    QComboBox* box = panel.comparisonBox();
    QVERIFY(box);
    QCOMPARE(panel.cornerWidget(Qt::TopRightCorner)->findChild<QComboBox*>(), box);
    QCOMPARE(box->count(), 1);
    QCOMPARE(box->currentText(), QStringLiteral("No comparison"));
    panel.setCase(QString::fromStdString(made.path), tapeId_);
    QVERIFY(settle(panel));
    // None first, then the tape's other runs, newest first; the other tape's run is not offered.
    QStringList texts;
    for (int i = 0; i < box->count(); ++i)
        texts << box->itemText(i);
    QCOMPARE(texts, QStringList({QStringLiteral("No comparison"), QStringLiteral("vs Run #%1 · cpu · finished").arg(run_),
                                 QStringLiteral("vs Run #%1 · cpu · finished").arg(olderRun_)}));
    QVERIFY(box->isEnabled());

    // The user picks a run: the panel compares with it.
    Q_EMIT box->activated(2);
    QCOMPARE(panel.comparisonRun(), olderRun_);
    QVERIFY(settle(panel));
    QVERIFY(panel.isComparing());
    QCOMPARE(panel.comparisonPointCount(), 1);
    QCOMPARE(box->currentIndex(), 2);
    // Set from outside, the box follows.
    panel.setComparisonRun(run_);
    QCOMPARE(box->currentIndex(), 1);
    QVERIFY(settle(panel));
    Q_EMIT box->activated(0);
    QCOMPARE(panel.comparisonRun(), qint64(0));
    QVERIFY(settle(panel));
    QCOMPARE(panel.comparisonPointCount(), 0);
}

void TestCharts::comparisonRunOfAnotherTapeIsRefused()
{
    test::TempDir dir;
    const ComparisonCase made = makeComparisonCase(dir);
    ChartPanel panel;
    QSignalSpy problems(&panel, &ChartPanel::problem);
    panel.setCase(QString::fromStdString(made.path), tapeId_);
    QVERIFY(settle(panel));
    panel.setComparisonRun(run_);
    QVERIFY(settle(panel));
    QVERIFY(panel.isComparing());
    for (const qint64 refused : {qint64(made.otherTapeRun), qint64(made.gpuRun + 1000), qint64(TransactionTable::kEveryRun)}) {
        const int before = problems.count();
        panel.setComparisonRun(refused);
        QCOMPARE(problems.count(), before + 1);
        const QString message = problems.last().first().toString();
        QVERIFY2(message.contains(QStringLiteral("Not compared with run %1").arg(refused)), qPrintable(message));
        // Refused, and what was compared before is cleared.
        QCOMPARE(panel.comparisonRun(), qint64(0));
        QVERIFY(settle(panel));
        QVERIFY(!panel.isComparing());
        QCOMPARE(panel.comparisonPointCount(), 0);
        QCOMPARE(panel.comparisonBox()->currentIndex(), 0);
        panel.setComparisonRun(run_);
        QVERIFY(settle(panel));
    }
    // Without a case nothing can be compared.
    panel.setCase(QString(), 0);
    panel.setComparisonRun(run_);
    QCOMPARE(panel.comparisonRun(), qint64(0));
    QVERIFY(problems.last().first().toString().contains(QStringLiteral("no case")));
}

void TestCharts::removedComparisonRunIsCleared()
{
    test::TempDir dir;
    const ComparisonCase made = makeComparisonCase(dir);
    ChartPanel panel;
    QSignalSpy problems(&panel, &ChartPanel::problem);
    panel.setCase(QString::fromStdString(made.path), tapeId_);
    QVERIFY(settle(panel));
    panel.setComparisonRun(run_);
    QVERIFY(settle(panel));
    QVERIFY(panel.isComparing());
    QCOMPARE(problems.count(), 0);
    {
        // Gone from the case while charted (a hand edit: the case has no command for it).
        Database db(made.path, Database::Mode::ReadWrite);
        db.exec("DELETE FROM replay_runs WHERE id = " + std::to_string(run_));
    }
    panel.refresh();
    QVERIFY(settle(panel));
    QCOMPARE(problems.count(), 1);
    QVERIFY2(problems.first().first().toString().contains(QStringLiteral("Not compared with run %1").arg(run_)),
             qPrintable(problems.first().first().toString()));
    QCOMPARE(panel.comparisonRun(), qint64(0));
    QVERIFY(!panel.isComparing());
    QCOMPARE(panel.comparisonPointCount(), 0);
    // The shown run is still charted, and the box no longer offers the run.
    QCOMPARE(panel.divergencePointCount(), 4);
    for (int i = 0; i < panel.comparisonBox()->count(); ++i)
        QVERIFY(panel.comparisonBox()->itemData(i).toLongLong() != run_);
}

void TestCharts::exportedImageNamesTapeRunsAndCase()
{
    test::TempDir dir;
    const ComparisonCase made = makeComparisonCase(dir);
    ChartPanel panel;
    panel.resize(1000, 600);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.setCase(QString::fromStdString(made.path), tapeId_);
    QVERIFY(settle(panel));
    std::string chainHead;
    {
        CaseStore store(made.path, CaseStore::Access::ReadOnly);
        chainHead = store.tape(tapeId_)->chainHead;
    }
    const QString gpu = QStringLiteral("Run #%1 (cuda:0)").arg(made.gpuRun), cpu = QStringLiteral("Run #%1 (cpu)").arg(run_);
    ui::ChartTools* divergence = ui::ChartTools::of(panel.divergencePlot());
    ui::ChartTools* loss = ui::ChartTools::of(panel.lossPlot());
    QCOMPARE(divergence->captionTitle(), QStringLiteral("demo.zkdv — ") + gpu);
    const QStringList footer = divergence->captionFooter().split(QLatin1Char('\n'));
    QCOMPARE(footer.size(), 3);
    QVERIFY2(footer[0].contains(QStringLiteral("demo.zkdv")) && footer[0].contains(QString::fromStdString(chainHead.substr(0, 16)))
                 && footer[0].contains(QStringLiteral("tape %1").arg(tapeId_)),
             qPrintable(footer[0]));
    QCOMPARE(footer[1], QStringLiteral("Run: Run #%1 · cuda:0 · finished").arg(made.gpuRun));
    QCOMPARE(footer[2], QStringLiteral("Case: ") + QDir::toNativeSeparators(QString::fromStdString(made.path)));

    // Compared: the charts that draw the comparison name it; the others do not.
    panel.setComparisonRun(run_);
    QVERIFY(settle(panel));
    QCOMPARE(divergence->captionTitle(), QStringLiteral("demo.zkdv — %1 vs %2").arg(gpu, cpu));
    QVERIFY2(divergence->captionFooter().contains(QStringLiteral("compared with Run #%1 · cpu · finished").arg(run_)),
             qPrintable(divergence->captionFooter()));
    QVERIFY(ui::ChartTools::of(panel.histogramPlot())->captionTitle().endsWith(QStringLiteral(" vs ") + cpu));
    QCOMPARE(loss->captionTitle(), QStringLiteral("demo.zkdv — ") + gpu);
    QVERIFY(!loss->captionFooter().contains(QStringLiteral("compared")));

    // The export dialog proposes the chart's size and caption; the image has exactly the size asked.
    panel.setCurrentWidget(panel.divergencePlot());
    QTRY_VERIFY(panel.divergencePlot()->isVisible());
    ui::ChartImageOptions options = divergence->imageOptions();
    QCOMPARE(options.size, panel.divergencePlot()->size());
    QCOMPARE(options.title, divergence->captionTitle());
    QCOMPARE(options.footer, divergence->captionFooter());
    options.size = QSize(1400, 900);
    const QString png = QString::fromStdString(dir.file("divergence.png"));
    QString error;
    QVERIFY2(divergence->exportPng(png, options, &error), qPrintable(error));
    const QImage image(png);
    QCOMPARE(image.size(), QSize(1400, 900));
    QVERIFY(darkPixels(image, QRect(450, 0, 500, 30)) > 40);   // the title, centred
    QVERIFY(darkPixels(image, QRect(0, 860, 400, 40)) > 40);   // the footer's last line, at the left
    // Both runs' markers are in it (the comparison's hollow ones drawn antialiased: near their colour).
    const auto hasColour = [&image](const QColor& colour) {
        for (int y = 0; y < image.height(); ++y)
            for (int x = 0; x < image.width(); ++x) {
                const QColor pixel = image.pixelColor(x, y);
                if (std::abs(pixel.red() - colour.red()) + std::abs(pixel.green() - colour.green()) + std::abs(pixel.blue() - colour.blue()) < 40)
                    return true;
            }
        return false;
    };
    QVERIFY(hasColour(panel.divergencePlot()->maxUlpGraph()->scatterStyle().pen().color()));
    QVERIFY(hasColour(panel.divergencePlot()->comparisonMaxUlpGraph()->scatterStyle().pen().color()));

    // No case: the captions go.
    panel.setCase(QString(), 0);
    QCOMPARE(divergence->captionFooter(), QString());
    QCOMPARE(divergence->captionTitle(), panel.divergencePlot()->accessibleName());
}

QTEST_MAIN(TestCharts)
#include "test_charts.moc"
