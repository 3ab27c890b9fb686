// The transaction detail pane (offscreen): the tree of a replayed transaction of the demo
// case against the case's own rows; an auditor's note edited there, shown in the table's
// Note column and selected by the flag filter; "Compare elements" on a tampered delta,
// in the background, naming the changed element first (and the core call behind it);
// "Explain Divergence" in the background, its dialog; a screenshot of the pane for docs/.

#include <QtTest>

#include <algorithm>

#include <QComboBox>
#include <QDialog>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTableView>
#include <QTableWidget>
#include <QTreeWidget>

#include "dishonest_trainer.h"
#include "jobs/background_job.h"
#include "main_window.h"
#include "models/transaction_table_model.h"
#include "plots/element_difference_chart.h"
#include "settings/settings.h"
#include "temp_dir.h"
#include "widgets/case_overview.h"
#include "widgets/divergence_explanation_view.h"
#include "widgets/top_q_count_label.h"
#include "widgets/transaction_detail_pane.h"
#include "zkdv/cnn_demo/cnn_demo.h"
#include "zkdv/replay/element_comparison.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/store/case_contents.h"
#include "zkdv/audit/selection.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/transaction_detail.h"
#include "zkdv/store/transaction_notes.h"

using namespace zkdv;
using namespace zkdv::ui;

namespace {

constexpr std::uint64_t kSteps = 24;
constexpr std::uint64_t kTampered = 5;  // fc.weight's delta element 3 scaled by 1.5 in the tape
constexpr std::uint64_t kHonest = 3;

QTreeWidgetItem* child(QTreeWidgetItem* parent, const QString& field)
{
    for (int i = 0; i < parent->childCount(); ++i)
        if (parent->child(i)->text(0) == field)
            return parent->child(i);
    return nullptr;
}

QTreeWidgetItem* topLevel(QTreeWidget* tree, const QString& field)
{
    for (int i = 0; i < tree->topLevelItemCount(); ++i)
        if (tree->topLevelItem(i)->text(0) == field)
            return tree->topLevelItem(i);
    return nullptr;
}

}  // namespace

class TestTransactionDetail : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void cleanup();
    void treeShowsWhatTheCaseHoldsForAReplayedTransaction();
    void treeSaysWhatTheRunDidNotReplay();
    void gradientTransformsAreShownAsRecorded();
    void noteEditedInThePaneShowsInTheTableAndTheFilter();
    void coreComparisonNamesTheTamperedElementFirst();
    void compareElementsRunsInTheBackgroundAndShowsTheWorstElement();
    void explainDivergenceRunsInTheBackgroundAndShowsTheCalls();
    void anUnsavedNoteIsSavedWhenTheRowChanges();
    void anUnsavedNoteIsSavedWhenAnotherCaseOpens();
    void anUnsavedNoteIsSavedWhenTheWindowCloses();
    void aNoteThatCannotBeSavedAsksAndCancelKeepsIt();
    void anotherTapeSettlesTheNoteAndCancelKeepsTheTape();
    void aReloadKeepsTheNoteBeingTyped();
    void theWheelScrollsThePaneOverTheFlagWithoutChangingIt();
    void valueCellsShowTheWholeNumberOnHover();
    void topQDialogSaysHowManyTransactionsItReplays();

private:
    void editNote(quint64 index, TransactionFlag flag, const QString& text);
    std::optional<TransactionNote> storedNote(quint64 index) const;
    void select(quint64 index);
    TransactionDetailPane* pane() const { return window_->detailPane(); }

    test::TempDir dir_;
    std::string case_;
    std::int64_t tape_ = 0;
    std::int64_t run_ = 0;
    std::unique_ptr<MainWindow> window_;
};

namespace {

// Answers the box the pane puts up when a note cannot be saved (polled: it is modal), and
// keeps what it said in `asked`.
void answerUnsavedNoteBox(QMessageBox::StandardButton button, QStringList* asked)
{
    auto* poll = new QTimer;
    QObject::connect(poll, &QTimer::timeout, poll, [poll, button, asked] {
        auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
        if (!box || box->objectName() != QStringLiteral("unsavedNoteBox"))
            return;
        *asked << box->text() + QLatin1Char(' ') + box->informativeText();
        box->button(button)->click();
        poll->deleteLater();
    });
    poll->start(20);
}

QModelIndex rowOfTape(CaseOverview* overview, qint64 tapeId)
{
    for (int row = 0; row < overview->overviewModel()->rowCount(); ++row)
        if (overview->overviewModel()->item(row)->data(Qt::UserRole).toLongLong() == tapeId)
            return overview->overviewModel()->index(row, 0);
    return {};
}

}  // namespace

void TestTransactionDetail::initTestCase()
{
    QCoreApplication::setOrganizationName(QStringLiteral("zkdv-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("test_transaction_detail"));
    const std::string honest = dir_.file("demo.zkdv"), tampered = dir_.file("tampered.zkdv");
    CnnDemoOptions options;
    options.steps = kSteps;
    options.batchSize = 8;
    options.updateCheckProbability = 1.0;  // full deltas everywhere
    runCnnDemo(honest, options);
    test::rewriteTape(honest, tampered, [](test::RawRecord& record) {
        if (test::isTransaction(record, kTampered))
            test::scaleElement(record, "delta/fc.weight", 3, 1.5f);
    });
    case_ = dir_.file("tampered.zkaudit");
    CaseStore store(case_, CaseStore::Access::ReadWrite);
    tape_ = store.ingestTape(tampered).tapeId;
    ReplayRequest request;
    request.selection = SelectionSpec::parse("ids:" + std::to_string(kHonest) + "," + std::to_string(kTampered));
    const ReplaySummary summary = runReplay(store, request);
    QCOMPARE(summary.diverged, std::uint64_t(1));
    run_ = summary.runId;
}

void TestTransactionDetail::init()
{
    Settings::clearRecentFiles();
    window_ = std::make_unique<MainWindow>();
    window_->resize(1400, 900);
    window_->show();
    QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
    QVERIFY(window_->openCase(QString::fromStdString(case_)));
    QCOMPARE(window_->transactionModel()->rowCount(), int(kSteps));
}

void TestTransactionDetail::cleanup()
{
    window_.reset();
    CaseStore store(case_, CaseStore::Access::ReadWrite);
    for (const TransactionNote& note : TransactionNotes(store.database(), tape_).all())
        TransactionNotes(store.database(), tape_).set(note.index, TransactionFlag::None, "");
}

void TestTransactionDetail::select(quint64 index)
{
    const int row = window_->transactionModel()->rowOfTransaction(index);
    QVERIFY(row >= 0);
    window_->transactionView()->selectRow(row);
    QTRY_VERIFY(pane()->shownTransaction() == std::optional<quint64>(index));
}

void TestTransactionDetail::treeShowsWhatTheCaseHoldsForAReplayedTransaction()
{
    select(kTampered);
    QTreeWidget* tree = pane()->tree();
    CaseStore store(case_, CaseStore::Access::ReadOnly);
    const TransactionDetail detail = loadTransactionDetail(store, tape_, kTampered);
    QVERIFY2(detail.recordProblem.empty(), detail.recordProblem.c_str());

    QTreeWidgetItem* recorded = topLevel(tree, QStringLiteral("Recorded"));
    QVERIFY(recorded);
    QTreeWidgetItem* batch = child(recorded, QStringLiteral("Batch"));
    QVERIFY(batch);
    QVERIFY(!detail.batch.empty());
    QCOMPARE(batch->childCount(), int(detail.batch.size()));
    for (std::size_t i = 0; i < detail.batch.size(); ++i) {
        QCOMPARE(batch->child(int(i))->text(0), QString::fromStdString(detail.batch[i].name));
        QCOMPARE(batch->child(int(i))->child(0)->text(1), QString::fromStdString(detail.batch[i].sha256));
    }
    QCOMPARE(child(recorded, QStringLiteral("Loss"))->text(1).section(QLatin1Char(' '), 0, 0), QString::number(detail.loss, 'g', 17));
    QVERIFY(detail.gradientTransforms.empty());
    QVERIFY(child(recorded, QStringLiteral("Gradient transforms"))->text(1).startsWith(QStringLiteral("none")));

    // Fingerprints: one per parameter, as recorded; the replayed ones are not in the case, and it says so.
    QTreeWidgetItem* fingerprints = topLevel(tree, QStringLiteral("Update fingerprints"));
    QVERIFY(fingerprints);
    const std::vector<StoredTensor> layout = loadModelLayout(store.database(), tape_);
    const int parameters = int(std::count_if(layout.begin(), layout.end(), [](const StoredTensor& t) { return !t.buffer; }));
    QCOMPARE(child(fingerprints, QStringLiteral("Recorded"))->childCount(), parameters);
    QVERIFY(child(fingerprints, QStringLiteral("Replayed"))->text(1).startsWith(QStringLiteral("not stored in the case")));

    QTreeWidgetItem* checks = topLevel(tree, QStringLiteral("Sampled checks"));
    QVERIFY(checks->text(1).contains(QStringLiteral("full deltas")));
    QCOMPARE(child(checks, QStringLiteral("Deltas"))->childCount(), parameters);
    QVERIFY(child(child(checks, QStringLiteral("Deltas")), QStringLiteral("fc.weight")));

    // Every comparison the run stored, with its verdict and metrics.
    QTreeWidgetItem* replay = topLevel(tree, QStringLiteral("Replay"));
    QCOMPARE(replay->text(1), QStringLiteral("run %1: diverged").arg(run_));
    const std::vector<TensorComparison> stored = ReplayStore(store.database()).comparisons(run_, kTampered);
    QTreeWidgetItem* comparisons = child(replay, QStringLiteral("Comparisons"));
    QVERIFY(!stored.empty());
    QCOMPARE(comparisons->childCount(), int(stored.size()));
    QTreeWidgetItem* delta = child(comparisons, QStringLiteral("fc.weight delta"));
    QVERIFY(delta);
    QVERIFY2(delta->text(1).startsWith(QStringLiteral("diverged")), qPrintable(delta->text(1)));
    QCOMPARE(child(delta, QStringLiteral("Bit for bit"))->text(1), QStringLiteral("no"));
    QVERIFY(child(comparisons, QStringLiteral("loss"))->text(1).startsWith(QStringLiteral("exact")));
}

void TestTransactionDetail::gradientTransformsAreShownAsRecorded()
{
    // The golden clipped tape (format 1.7): every step clipped by norm, then by value.
    const std::string path = dir_.file("clipped.zkaudit");
    CaseStore store(path, CaseStore::Access::ReadWrite);
    const std::int64_t tape = store.ingestTape(ZKDV_TEST_DATA_DIR "/golden/mlp-bf16-accumulated-clipped-adamw-1.7.zkdv").tapeId;
    const TransactionDetail detail = loadTransactionDetail(store, tape, 3);
    QVERIFY2(detail.recordProblem.empty(), detail.recordProblem.c_str());
    QCOMPARE(detail.gradientTransforms.size(), std::size_t(2));
    const QString norm = QString::fromStdString(detail.gradientTransforms[0]);
    QVERIFY2(norm.startsWith(QStringLiteral("clip_grad_norm_(max_norm=0.5, norm_type=2")) && norm.contains(QStringLiteral("): total norm ")),
             qPrintable(norm));
    QCOMPARE(QString::fromStdString(detail.gradientTransforms[1]), QStringLiteral("clip_grad_value_(clip_value=0.05)"));
}

void TestTransactionDetail::treeSaysWhatTheRunDidNotReplay()
{
    select(10);
    QTreeWidgetItem* replay = topLevel(pane()->tree(), QStringLiteral("Replay"));
    QVERIFY(replay);
    // All runs (the window's default): none of them replayed it.
    QCOMPARE(replay->text(1), QStringLiteral("none of the tape's 1 run(s) replayed it"));
    QCOMPARE(replay->childCount(), 0);
    QCOMPARE(child(topLevel(pane()->tree(), QStringLiteral("Update fingerprints")), QStringLiteral("Replayed"))->text(1),
             QStringLiteral("not replayed by the shown run"));
}

void TestTransactionDetail::noteEditedInThePaneShowsInTheTableAndTheFilter()
{
    select(kHonest);
    pane()->flagBox()->setCurrentIndex(int(TransactionFlag::Suspicious));
    pane()->noteEdit()->setPlainText(QStringLiteral("lr looks high here\nsecond line"));
    QSignalSpy saved(pane(), &TransactionDetailPane::noteSaved);
    QVERIFY(pane()->saveNote());
    QCOMPARE(saved.size(), 1);
    {
        CaseStore store(case_, CaseStore::Access::ReadOnly);
        const std::optional<TransactionNote> note = TransactionNotes(store.database(), tape_).note(kHonest);
        QVERIFY(note);
        QCOMPARE(note->flag, TransactionFlag::Suspicious);
        QCOMPARE(note->note, std::string("lr looks high here\nsecond line"));
    }
    TransactionTableModel* model = window_->transactionModel();
    const QModelIndex cell = model->index(model->rowOfTransaction(kHonest), TransactionTableModel::NoteColumn);
    QTRY_COMPARE(model->data(cell).toString(), QStringLiteral("[suspicious] lr looks high here"));
    QCOMPARE(model->headerData(TransactionTableModel::NoteColumn, Qt::Horizontal).toString(), QStringLiteral("Note"));
    model->setTextFilter(QStringLiteral("flag == suspicious"));
    QCOMPARE(model->rowCount(), 1);
    QCOMPARE(model->transactionAt(0), quint64(kHonest));
    model->setTextFilter(QStringLiteral("note contains \"LR LOOKS\""));
    QCOMPARE(model->rowCount(), 1);
    model->setTextFilter(QString());
    // Cleared again: the row goes, the column empties.
    select(kHonest);
    pane()->flagBox()->setCurrentIndex(0);
    pane()->noteEdit()->clear();
    QVERIFY(pane()->saveNote());
    QTRY_COMPARE(model->data(model->index(model->rowOfTransaction(kHonest), TransactionTableModel::NoteColumn)).toString(), QString());
}

void TestTransactionDetail::coreComparisonNamesTheTamperedElementFirst()
{
    CaseStore store(case_, CaseStore::Access::ReadOnly);
    const std::int64_t runsBefore = store.database().queryInt64("SELECT count(*) FROM replay_runs").value_or(-1);
    ElementComparisonRequest request;
    request.tapeId = tape_;
    request.index = kTampered;
    const ElementComparison result = compareTransactionElements(store, request);
    QCOMPARE(result.verdict, Verdict::Diverged);
    QVERIFY(result.omitted.empty());
    const auto fc = std::find_if(result.deltas.begin(), result.deltas.end(), [](const ElementTensor& t) { return t.tensor == "fc.weight"; });
    QVERIFY(fc != result.deltas.end());
    QCOMPARE(fc->shape.size(), std::size_t(2));
    QCOMPARE(fc->recorded.size(), fc->replayed.size());
    QCOMPARE(fc->worst.size(), std::size_t(1));  // only the changed element differs
    const WorstElement& worst = fc->worst.front();
    QCOMPARE(worst.flatIndex, std::uint64_t(3));
    QCOMPARE(worst.position, (std::vector<std::int64_t>{0, 3}));
    QCOMPARE(worst.recorded, fc->recorded[3]);
    QCOMPARE(worst.replayed, fc->replayed[3]);
    QCOMPARE(static_cast<float>(worst.recorded), static_cast<float>(worst.replayed) * 1.5f);
    QVERIFY(worst.ulp > 1000);
    QCOMPARE(worst.ulp, fc->comparison.metrics.maxUlp);
    // Every other delta reproduced bit for bit.
    for (const ElementTensor& t : result.deltas)
        if (t.tensor != "fc.weight") {
            QVERIFY2(t.worst.empty(), t.tensor.c_str());
            QCOMPARE(t.recorded, t.replayed);
        }
    // Nothing was stored: it is not a run.
    QCOMPARE(store.database().queryInt64("SELECT count(*) FROM replay_runs").value_or(-1), runsBefore);
    // A transaction without deltas cannot be compared element by element, and it is said.
    request.index = kSteps + 3;
    QVERIFY_THROWS_EXCEPTION(ReplayError, compareTransactionElements(store, request));
}

void TestTransactionDetail::compareElementsRunsInTheBackgroundAndShowsTheWorstElement()
{
    select(kTampered);
    QVERIFY(pane()->compareButton()->isEnabled());
    QSignalSpy finished(pane(), &TransactionDetailPane::elementComparisonFinished);
    QTest::mouseClick(pane()->compareButton(), Qt::LeftButton);
    QVERIFY(pane()->elementJob() && pane()->elementJob()->isRunning());
    QVERIFY(!pane()->compareButton()->isEnabled());
    // The window keeps handling events while the worker replays.
    int ticks = 0;
    QTimer ticker;
    connect(&ticker, &QTimer::timeout, this, [&] { ++ticks; });
    ticker.start(20);
    QVERIFY(finished.wait(180000));
    QVERIFY2(finished.front().at(0).toBool(), qPrintable(finished.front().at(1).toString()));
    QVERIFY(ticks > 0);
    QVERIFY(pane()->elementComparison());
    // The worst delta is shown first: fc.weight, as a heatmap, its changed element on top.
    QVERIFY2(pane()->elementTensorBox()->currentText().startsWith(QStringLiteral("fc.weight (diverged")),
             qPrintable(pane()->elementTensorBox()->currentText()));
    QVERIFY(pane()->elementChart()->showsHeatmap());
    QVERIFY(pane()->elementChart()->differenceMap());
    QVERIFY(pane()->elementChart()->largestDifference() > 0);
    QTableWidget* worst = pane()->worstElementTable();
    QCOMPARE(worst->rowCount(), 1);
    QCOMPARE(worst->item(0, 0)->text(), QStringLiteral("3 [0, 3]"));
    // A 1-D delta shows its values and a histogram of differences, all in the zero bin.
    const int bias = pane()->elementTensorBox()->findText(QStringLiteral("fc.bias"), Qt::MatchStartsWith);
    QVERIFY(bias >= 0);
    pane()->elementTensorBox()->setCurrentIndex(bias);
    QVERIFY(!pane()->elementChart()->showsHeatmap());
    QVERIFY(pane()->elementChart()->histogram());
    QCOMPARE(pane()->elementChart()->largestDifference(), 0.0);
    QCOMPARE(worst->rowCount(), 0);

    // The pane as docs/transaction-details.png shows it.
    pane()->elementTensorBox()->setCurrentIndex(pane()->elementTensorBox()->findText(QStringLiteral("fc.weight"), Qt::MatchStartsWith));
    pane()->setFloating(true);  // the size docs/ shows, whatever the window's layout
    pane()->resize(640, 980);
    QTest::qWait(100);
    const QImage image = pane()->grab().toImage();
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 3)
        for (int x = 0; x < image.width(); x += 3)
            colours.insert(image.pixel(x, y));
    QVERIFY2(colours.size() > 50, qPrintable(QStringLiteral("%1 colours").arg(colours.size())));
    QVERIFY(image.save(QStringLiteral(ZKDV_DETAIL_SCREENSHOT_PATH)));
}

void TestTransactionDetail::explainDivergenceRunsInTheBackgroundAndShowsTheCalls()
{
    select(kHonest);
    QVERIFY(pane()->explainButton() && pane()->explainButton()->isEnabled());
    QCOMPARE(pane()->explainButton()->text(), QStringLiteral("Explain Divergence…"));
    // A side that does not parse never starts a job.
    QSignalSpy problems(pane(), &TransactionDetailPane::problem);
    QVERIFY(!pane()->explainDivergence(QStringLiteral("cpu,gpu")));
    QVERIFY(!problems.isEmpty() && problems.back().at(0).toString().contains(QStringLiteral("unknown device")));
    QVERIFY(!pane()->explainJob());

    // The same side twice: two workers replay the transaction, every call bit for bit.
    QSignalSpy finished(pane(), &TransactionDetailPane::divergenceExplained);
    QVERIFY(pane()->explainDivergence(QStringLiteral("cpu,cpu")));
    QVERIFY(pane()->explainJob() && pane()->explainJob()->isRunning());
    QVERIFY(!pane()->explainButton()->isEnabled());
    QVERIFY(!pane()->explainDivergence(QStringLiteral("cpu,cpu")));  // one at a time
    QVERIFY(finished.wait(300000));
    QVERIFY2(finished.front().at(0).toBool(), qPrintable(finished.front().at(1).toString()));
    QVERIFY(pane()->explainButton()->isEnabled());
    DivergenceExplanationView* view = pane()->explanationView();
    QVERIFY(view && view->isVisible() && view->window() != window_.get());
    QVERIFY2(view->window()->windowTitle().contains(QString::number(kHonest)), qPrintable(view->window()->windowTitle()));
    QVERIFY2(view->summary()->text().contains(QStringLiteral("every output bit for bit")), qPrintable(view->summary()->text()));
    QVERIFY2(view->summary()->text().contains(QStringLiteral("operator granularity")), qPrintable(view->summary()->text()));
    QCOMPARE(view->table()->rowCount(), 0);
    QCOMPARE(view->namedRow(), -1);
    view->window()->close();
    QTRY_VERIFY(!pane()->explanationView());  // the window deletes itself
}

void TestTransactionDetail::editNote(quint64 index, TransactionFlag flag, const QString& text)
{
    select(index);
    pane()->flagBox()->setCurrentIndex(int(flag));
    pane()->noteEdit()->setPlainText(text);
    QVERIFY(pane()->hasUnsavedNote());
}

std::optional<TransactionNote> TestTransactionDetail::storedNote(quint64 index) const
{
    CaseStore store(case_, CaseStore::Access::ReadOnly);
    return TransactionNotes(store.database(), tape_).note(index);
}

void TestTransactionDetail::anUnsavedNoteIsSavedWhenTheRowChanges()
{
    editNote(kHonest, TransactionFlag::Question, QStringLiteral("typed, never saved"));
    select(10);
    const std::optional<TransactionNote> note = storedNote(kHonest);
    QVERIFY(note);
    QCOMPARE(note->flag, TransactionFlag::Question);
    QCOMPARE(note->note, std::string("typed, never saved"));
    QVERIFY(!pane()->hasUnsavedNote());
    QVERIFY(!storedNote(10));
}

void TestTransactionDetail::anUnsavedNoteIsSavedWhenAnotherCaseOpens()
{
    editNote(kHonest, TransactionFlag::Suspicious, QStringLiteral("before the other case"));
    const QString other = QString::fromStdString(dir_.file("other.zkaudit"));
    QVERIFY(window_->openCase(other));
    QCOMPARE(window_->casePath(), other);
    const std::optional<TransactionNote> note = storedNote(kHonest);
    QVERIFY(note);
    QCOMPARE(note->flag, TransactionFlag::Suspicious);
    QCOMPARE(note->note, std::string("before the other case"));
}

void TestTransactionDetail::anUnsavedNoteIsSavedWhenTheWindowCloses()
{
    editNote(kTampered, TransactionFlag::Confirmed, QStringLiteral("closing now"));
    QVERIFY(window_->close());
    const std::optional<TransactionNote> note = storedNote(kTampered);
    QVERIFY(note);
    QCOMPARE(note->flag, TransactionFlag::Confirmed);
    QCOMPARE(note->note, std::string("closing now"));
}

void TestTransactionDetail::aNoteThatCannotBeSavedAsksAndCancelKeepsIt()
{
    editNote(kHonest, TransactionFlag::Question, QStringLiteral("kept through a busy case"));
    // Another writer holds the case (an ingest would): the note cannot be stored now.
    auto writer = std::make_unique<CaseStore>(case_, CaseStore::Access::ReadWrite);
    writer->database().exec("BEGIN IMMEDIATE");
    QStringList asked;
    auto answer = [&asked](QMessageBox::StandardButton button) { answerUnsavedNoteBox(button, &asked); };

    // The window stays open, with the note.
    answer(QMessageBox::Cancel);
    QVERIFY(!window_->close());
    QCOMPARE(asked.size(), 1);
    QVERIFY2(asked.front().contains(QStringLiteral("transaction %1").arg(kHonest)) && asked.front().contains(QStringLiteral("being written")),
             qPrintable(asked.front()));
    QVERIFY(window_->isVisible());
    QCOMPARE(pane()->noteEdit()->toPlainText(), QStringLiteral("kept through a busy case"));

    // Another row: Cancel keeps the row (the selection comes back) and the note.
    answer(QMessageBox::Cancel);
    window_->transactionView()->selectRow(window_->transactionModel()->rowOfTransaction(10));
    QTRY_COMPARE(asked.size(), 2);
    QTRY_COMPARE(window_->transactionModel()->transactionAt(window_->transactionView()->selectionModel()->currentIndex().row()), quint64(kHonest));
    QTest::qWait(200);
    QCOMPARE(asked.size(), 2);  // asked once, though a click signals twice
    QCOMPARE(pane()->shownTransaction(), std::optional<quint64>(kHonest));
    QCOMPARE(pane()->noteEdit()->toPlainText(), QStringLiteral("kept through a busy case"));

    // Another case: Cancel keeps this one.
    answer(QMessageBox::Cancel);
    QVERIFY(!window_->openCase(QString::fromStdString(dir_.file("other.zkaudit"))));
    QCOMPARE(window_->casePath(), QString::fromStdString(case_));
    QCOMPARE(asked.size(), 3);

    // The writer done, Save stores it.
    writer->database().exec("COMMIT");
    writer.reset();
    QVERIFY(pane()->settlePendingNote());
    QCOMPARE(asked.size(), 3);
    QCOMPARE(storedNote(kHonest)->note, std::string("kept through a busy case"));

    // Discard drops it and moves on.
    pane()->noteEdit()->setPlainText(QStringLiteral("dropped"));
    writer = std::make_unique<CaseStore>(case_, CaseStore::Access::ReadWrite);
    writer->database().exec("BEGIN IMMEDIATE");
    answer(QMessageBox::Discard);
    QVERIFY(pane()->settlePendingNote());
    QCOMPARE(asked.size(), 4);
    QVERIFY(!pane()->hasUnsavedNote());
    writer->database().exec("COMMIT");
    writer.reset();
    QCOMPARE(storedNote(kHonest)->note, std::string("kept through a busy case"));
}

void TestTransactionDetail::anotherTapeSettlesTheNoteAndCancelKeepsTheTape()
{
    // A case of two tapes: the tampered one (first, in view) and the honest one.
    const std::string twoTapes = dir_.file("two-tapes.zkaudit");
    std::int64_t first = 0, second = 0;
    {
        CaseStore store(twoTapes, CaseStore::Access::ReadWrite);
        first = store.ingestTape(dir_.file("tampered.zkdv")).tapeId;
        second = store.ingestTape(dir_.file("demo.zkdv")).tapeId;
    }
    QVERIFY(window_->openCase(QString::fromStdString(twoTapes)));
    QCOMPARE(window_->currentTape(), qint64(first));
    select(kHonest);
    pane()->noteEdit()->setPlainText(QStringLiteral("typed before the tape changed"));
    auto* overview = window_->findChild<CaseOverview*>();
    QVERIFY(overview);

    // The note cannot be stored now; Cancel keeps the tape, the row and the note.
    auto writer = std::make_unique<CaseStore>(twoTapes, CaseStore::Access::ReadWrite);
    writer->database().exec("BEGIN IMMEDIATE");
    QStringList asked;
    answerUnsavedNoteBox(QMessageBox::Cancel, &asked);
    overview->setCurrentIndex(rowOfTape(overview, second));
    QTRY_COMPARE(asked.size(), 1);
    QTRY_COMPARE(overview->currentIndex().row(), rowOfTape(overview, first).row());
    QCOMPARE(overview->currentTape(), qint64(first));
    QCOMPARE(window_->currentTape(), qint64(first));
    QCOMPARE(pane()->shownTransaction(), std::optional<quint64>(kHonest));
    QCOMPARE(pane()->noteEdit()->toPlainText(), QStringLiteral("typed before the tape changed"));

    // The writer done, the tape changes and the note is stored on the tape it was written on.
    writer->database().exec("COMMIT");
    writer.reset();
    overview->setCurrentIndex(rowOfTape(overview, second));
    QTRY_COMPARE(window_->currentTape(), qint64(second));
    QCOMPARE(asked.size(), 1);
    CaseStore store(twoTapes, CaseStore::Access::ReadOnly);
    const std::optional<TransactionNote> note = TransactionNotes(store.database(), first).note(kHonest);
    QVERIFY(note);
    QCOMPARE(note->note, std::string("typed before the tape changed"));
    QVERIFY(!TransactionNotes(store.database(), second).note(kHonest));
}

void TestTransactionDetail::aReloadKeepsTheNoteBeingTyped()
{
    editNote(kHonest, TransactionFlag::Question, QStringLiteral("half a thought"));
    pane()->reload();  // as after a replay storing results
    QCOMPARE(pane()->noteEdit()->toPlainText(), QStringLiteral("half a thought"));
    QCOMPARE(pane()->flagBox()->currentIndex(), int(TransactionFlag::Question));
    QVERIFY(pane()->hasUnsavedNote());
}

void TestTransactionDetail::theWheelScrollsThePaneOverTheFlagWithoutChangingIt()
{
    select(kHonest);
    pane()->setFloating(true);
    pane()->resize(420, 260);  // small enough to scroll
    QTest::qWait(50);
    QScrollBar* bar = pane()->scrollArea()->verticalScrollBar();
    QTRY_VERIFY(bar->maximum() > 0);
    QComboBox* flag = pane()->flagBox();
    window_->transactionView()->setFocus();
    QVERIFY(!flag->hasFocus());
    QCOMPARE(flag->focusPolicy(), Qt::StrongFocus);  // the wheel does not give it the focus either
    const int before = bar->value();
    const QPointF at(flag->width() / 2.0, flag->height() / 2.0);
    QWheelEvent wheel(at, flag->mapToGlobal(at), QPoint(), QPoint(0, -120), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(flag, &wheel);
    QCOMPARE(flag->currentIndex(), 0);
    QVERIFY(!pane()->hasUnsavedNote());
    QVERIFY2(bar->value() > before, qPrintable(QStringLiteral("%1 -> %2").arg(before).arg(bar->value())));
    // Every combo box of the pane, and the window's quick filter, are guarded alike.
    for (QComboBox* box : pane()->findChildren<QComboBox*>())
        QCOMPARE(box->focusPolicy(), Qt::StrongFocus);
    QTRY_VERIFY(window_->findChild<QComboBox*>(QStringLiteral("quickFilter"))->focusPolicy() == Qt::StrongFocus);
    for (QComboBox* box : window_->findChildren<QComboBox*>())
        QVERIFY2(box->focusPolicy() != Qt::WheelFocus, qPrintable(box->objectName()));
}

void TestTransactionDetail::valueCellsShowTheWholeNumberOnHover()
{
    CaseStore store(case_, CaseStore::Access::ReadOnly);
    const TransactionDetail detail = loadTransactionDetail(store, tape_, kTampered);
    TransactionTableModel* model = window_->transactionModel();
    const int row = model->rowOfTransaction(kTampered);
    QVERIFY(row >= 0);
    auto tip = [&](int column) {
        QString text;  // the row may still be on its way from the loader thread
        for (int i = 0; i < 250 && text.isEmpty(); ++i) {
            text = model->data(model->index(row, column), Qt::ToolTipRole).toString();
            if (text.isEmpty())
                QTest::qWait(20);
        }
        return text;
    };
    const struct {
        int column;
        double value;
    } cells[] = {{TransactionTableModel::LossColumn, detail.loss},
                 {TransactionTableModel::LearningRateColumn, detail.lr},
                 {TransactionTableModel::UpdateNormColumn, detail.updateNorm}};
    for (const auto& cell : cells) {
        const QString full = QString::number(cell.value, 'g', 17);
        const QString text = tip(cell.column);
        QVERIFY2(text.contains(full), qPrintable(QStringLiteral("column %1: '%2' lacks %3").arg(cell.column).arg(text, full)));
        QCOMPARE(full.toDouble(), cell.value);  // read back exactly
    }
}

void TestTransactionDetail::topQDialogSaysHowManyTransactionsItReplays()
{
    auto expected = [this](int q) {
        CaseStore store(case_, CaseStore::Access::ReadOnly);
        SelectionSpec spec;
        spec.kind = SelectionSpec::Kind::TopQ;
        spec.count = static_cast<std::uint64_t>(q);
        return quint64(selectTransactions(spec, 0, ReplayStore(store.database()).selectionInput(tape_, true)).size());
    };
    QAction* topq = nullptr;
    for (QAction* action : window_->findChildren<QAction*>())
        if (action->shortcut() == QKeySequence(Qt::CTRL | Qt::Key_T))
            topq = action;
    QVERIFY(topq);
    Settings::setTopQ(1);
    QStringList seen;
    bool done = false;
    QTimer poll;
    connect(&poll, &QTimer::timeout, this, [&] {
        auto* dialog = qobject_cast<QDialog*>(QApplication::activeModalWidget());
        if (!dialog || dialog->objectName() != QStringLiteral("topQDialog") || done)
            return;
        auto* label = dialog->findChild<TopQCountLabel*>();
        auto* q = dialog->findChild<QSpinBox*>(QStringLiteral("topQ"));
        if (!label || !q)
            return;
        if (!label->count())
            return;  // still counting
        seen << label->text();
        if (seen.size() == 1) {
            QCOMPARE(*label->count(), expected(1));
            q->setValue(4);  // counted again, off this thread
        } else if (label->q() == 4) {
            QCOMPARE(*label->count(), expected(4));
            done = true;
            dialog->reject();
        }
    });
    poll.start(20);
    topq->trigger();
    poll.stop();
    QVERIFY(done);
    QCOMPARE(seen.size(), 2);
    QVERIFY2(seen[0].startsWith(QStringLiteral("Top-1 selects %1 of %2 transactions").arg(expected(1)).arg(kSteps)), qPrintable(seen[0]));
    QVERIFY2(seen[1].startsWith(QStringLiteral("Top-4 selects %1 of %2 transactions").arg(expected(4)).arg(kSteps)), qPrintable(seen[1]));
    QVERIFY(expected(4) > expected(1));
    QCOMPARE(Settings::topQ(), 1);  // rejected: nothing replayed, nothing kept
    QVERIFY(!window_->currentJob() || !window_->currentJob()->isRunning());
}

QTEST_MAIN(TestTransactionDetail)
#include "test_transaction_detail.moc"
