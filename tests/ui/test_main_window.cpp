// The workstation's window on the offscreen platform: drag-and-drop of a valid tape, a
// corrupt tape and a non-tape file; a replay started from the GUI; shortcuts and settings.
// Every function gets a new window, its own copy of the tape and no recent files, so each
// passes alone and in any order (`test_main_window -platform offscreen FUNCTION`).

#include <QtTest>

#include <QAbstractItemModelTester>
#include <QAction>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLineEdit>
#include <QPushButton>
#include <QMimeData>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QTableView>
#include <QTimer>

#include <filesystem>
#include <functional>

#include <nlohmann/json.hpp>

#include "file_bytes.h"
#include "jobs/background_job.h"
#include "dialogs/sample_dialog.h"
#include "main_window.h"
#include "models/transaction_table_model.h"
#include "plots/chart_panel.h"
#include "settings/settings.h"
#include "temp_dir.h"
#include "widgets/case_overview.h"
#include "widgets/finding_banner.h"
#include "widgets/job_progress_frame.h"
#include "widgets/missing_tape_bar.h"
#include "widgets/path_field.h"
#include "widgets/run_list.h"
#include "zkdv/store/transaction_table.h"
#include "zkdv/cnn_demo/cnn_demo.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/tape/tape_scanner.h"

using namespace zkdv;
using namespace zkdv::ui;

namespace {

constexpr int kSteps = 36;

void drop(QWidget& target, const QStringList& paths, bool* accepted = nullptr)
{
    QMimeData mime;
    QList<QUrl> urls;
    for (const QString& path : paths)
        urls << QUrl::fromLocalFile(path);
    mime.setUrls(urls);
    const QPointF where(target.width() / 2.0, target.height() / 2.0);
    QDragEnterEvent enter(where.toPoint(), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&target, &enter);
    if (accepted)
        *accepted = enter.isAccepted();
    if (!enter.isAccepted())
        return;
    QDropEvent dropped(where, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&target, &dropped);
}

// Waits for the window's running job; returns its (ok, message).
std::pair<bool, QString> waitForJob(MainWindow& window, QSignalSpy& finished, int timeoutMs = 120000)
{
    if (finished.isEmpty() && !finished.wait(timeoutMs))
        return {false, QStringLiteral("timed out")};
    const QList<QVariant> arguments = finished.takeFirst();
    Q_UNUSED(window);
    return {arguments.at(0).toBool(), arguments.at(1).toString()};
}

// The progress frame's button and the Esc action name what ending the running job does.
void checkInterruptLabels(MainWindow& window, const QString& label)
{
    // The status bar's frame (the detail pane has one of its own).
    JobProgressFrame* frame = window.statusBar()->findChild<JobProgressFrame*>();
    QVERIFY(frame);
    QCOMPARE(frame->buttonText(), label);
    QAction* escape = nullptr;
    for (QAction* action : window.findChildren<QAction*>())
        if (action->shortcut() == QKeySequence(Qt::Key_Escape))
            escape = action;
    QVERIFY(escape);
    const QString escapeText = QStringLiteral("&") + label;
    QCOMPARE(escape->text(), escapeText);
}

}  // namespace

class TestMainWindow : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void cleanup();
    void droppedTapeIsIngestedIntoANewCase();
    void droppedCorruptTapeIsRefusedAndNothingIsLost();
    void droppedNonTapeFileIsNamedInTheStatusBar();
    void corruptTapeOnAnEmptyWindowIsReportedAndLeavesNoCase();
    void truncatedTapeOffersItsReadablePart();
    void movedTapeIsLocatedByItsChainHead();
    void replayStartedFromTheWindow();
    void sampleDialogProposesAFreshSeed();
    void laterRunKeepsEarlierResultsVisible();
    void tableExportsAsShownToCsv();
    void everyActionHasAShortcut();
    void recentFilesRemembered();

private:
    // The function's tape ingested into a new case beside it, opened in the window.
    bool openIngestedCase();

    test::TempDir dir_;
    QString recordedTape_, corrupt_, notes_;
    std::unique_ptr<test::TempDir> functionDir_;  // this function's tape and case
    QString tape_;
    std::unique_ptr<MainWindow> window_;
};

void TestMainWindow::initTestCase()
{
    QCoreApplication::setOrganizationName(QStringLiteral("zkdv-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("test_main_window"));
    recordedTape_ = QString::fromStdString(dir_.file("demo.zkdv"));
    CnnDemoOptions options;
    options.steps = kSteps;
    options.batchSize = 8;
    options.updateCheckProbability = 0.2;
    runCnnDemo(recordedTape_.toStdString(), options);

    // The same tape with one payload byte flipped in its middle: the chain breaks there.
    std::vector<std::uint8_t> bytes = test::readAll(recordedTape_.toStdString());
    bytes[bytes.size() / 2] ^= 0x10;
    corrupt_ = QString::fromStdString(dir_.file("corrupt.zkdv"));
    test::writeAll(corrupt_.toStdString(), bytes);
    QCOMPARE(scanTape(corrupt_.toStdString()).status, TapeStatus::Corrupt);

    notes_ = QString::fromStdString(dir_.file("notes.txt"));
    test::writeText(notes_.toStdString(), "not a tape\n");
}

void TestMainWindow::init()
{
    Settings::clearRecentFiles();
    functionDir_ = std::make_unique<test::TempDir>();
    tape_ = QString::fromStdString(functionDir_->file("demo.zkdv"));
    std::filesystem::copy_file(recordedTape_.toStdString(), tape_.toStdString());
    window_ = std::make_unique<MainWindow>();
    window_->show();
}

void TestMainWindow::cleanup()
{
    window_.reset();
    functionDir_.reset();
}

bool TestMainWindow::openIngestedCase()
{
    const QString casePath = QString::fromStdString(functionDir_->file("demo.zkaudit"));
    {
        CaseStore store(casePath.toStdString(), CaseStore::Access::ReadWrite);
        store.ingestTape(tape_.toStdString());
    }
    return window_->openCase(casePath) && window_->currentTape() != 0 && window_->transactionModel()->rowCount() == kSteps;
}

void TestMainWindow::droppedTapeIsIngestedIntoANewCase()
{
    QAbstractItemModelTester tester(window_->transactionModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    CaseOverview* overview = window_->findChild<CaseOverview*>();
    QVERIFY(overview);
    QAbstractItemModelTester overviewTester(overview->overviewModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy finished(window_.get(), &MainWindow::jobFinished);
    bool accepted = false;
    drop(*window_, {tape_}, &accepted);
    QVERIFY(accepted);
    QVERIFY(window_->currentJob());
    // Ending an ingest early rolls it back: the button says Cancel.
    QVERIFY(window_->currentJob()->interruption() == Interruption::Cancel);
    checkInterruptLabels(*window_, QStringLiteral("Cancel"));
    const auto [ok, message] = waitForJob(*window_, finished);
    QVERIFY2(ok, qPrintable(message));
    QCOMPARE(window_->casePath(), QString::fromStdString(functionDir_->file("demo.zkaudit")));
    QVERIFY(window_->currentTape() != 0);
    QCOMPARE(window_->transactionModel()->rowCount(), kSteps);
    QCOMPARE(overview->tapeCount(), 1);
    QVERIFY(overview->overviewModel()->rowCount(overview->overviewModel()->index(0, 0)) >= 8);  // status, digests, program, layout…
    QTRY_COMPARE(window_->charts()->lossPointCount(), kSteps);
    CaseStore store(window_->casePath().toStdString(), CaseStore::Access::ReadOnly);
    QCOMPARE(store.tapes().size(), std::size_t(1));
}

void TestMainWindow::droppedCorruptTapeIsRefusedAndNothingIsLost()
{
    QVERIFY(openIngestedCase());
    QSignalSpy finished(window_.get(), &MainWindow::jobFinished);
    drop(*window_, {corrupt_});
    const auto [ok, message] = waitForJob(*window_, finished);
    QVERIFY(!ok);
    QVERIFY2(message.contains(QStringLiteral("corrupt")) && message.contains(QStringLiteral("record")), qPrintable(message));
    QVERIFY2(window_->statusBar()->currentMessage().contains(QStringLiteral("corrupt.zkdv")), qPrintable(window_->statusBar()->currentMessage()));
    QCOMPARE(window_->transactionModel()->rowCount(), kSteps);
    CaseStore store(window_->casePath().toStdString(), CaseStore::Access::ReadOnly);
    QCOMPARE(store.tapes().size(), std::size_t(1));
}

void TestMainWindow::corruptTapeOnAnEmptyWindowIsReportedAndLeavesNoCase()
{
    const QString tape = QString::fromStdString(functionDir_->file("corrupt.zkdv"));
    std::filesystem::copy_file(corrupt_.toStdString(), tape.toStdString());
    const TapeSummary scanned = scanTape(tape.toStdString());
    QVERIFY(scanned.problem.has_value());
    QSignalSpy finished(window_.get(), &MainWindow::jobFinished);
    drop(*window_, {tape});
    const auto [ok, message] = waitForJob(*window_, finished);
    QVERIFY(!ok);
    // The whole finding stays in view: file, record, byte offset.
    FindingBanner* banner = window_->findingBanner();
    QVERIFY(banner->isVisible());
    const QString text = banner->text();
    QVERIFY2(text.contains(QStringLiteral("corrupt.zkdv")) && text.contains(QStringLiteral("record %1").arg(scanned.problem->recordIndex)) &&
                 text.contains(QStringLiteral("byte offset %1").arg(scanned.problem->byteOffset)),
             qPrintable(text));
    // The case made for it is gone again, from disk and from Open Recent.
    const QString createdCase = QString::fromStdString(functionDir_->file("corrupt.zkaudit"));
    QVERIFY(!QFileInfo::exists(createdCase));
    QVERIFY(!Settings::recentFiles().contains(QFileInfo(createdCase).absoluteFilePath()));
    QVERIFY(window_->casePath().isEmpty());
    QVERIFY(window_->showsStartPage());
    // The finding can be reported: the GUI reports tampering it could not ingest.
    const QString json = QString::fromStdString(functionDir_->file("finding.json"));
    QVERIFY(window_->exportFindingReport(json));
    const nlohmann::json report = nlohmann::json::parse(test::readText(json.toStdString()));
    QCOMPARE(report["conclusion"]["outcome"].get<std::string>(), std::string("FAILED"));
    QCOMPARE(report["conclusion"]["passed"].get<bool>(), false);
    const std::string headline = report["conclusion"]["headline"].get<std::string>();
    QVERIFY2(headline.find("corrupt") != std::string::npos && headline.find("byte " + std::to_string(scanned.problem->byteOffset)) != std::string::npos,
             headline.c_str());
    QVERIFY(window_->exportFindingReport(QString::fromStdString(functionDir_->file("finding.html"))));
    QVERIFY(test::readText(functionDir_->file("finding.html")).find("FAILED") != std::string::npos);
    banner->dismiss();
    QVERIFY(!banner->isVisible());
    QVERIFY(!window_->exportFindingReport(json));
}

void TestMainWindow::truncatedTapeOffersItsReadablePart()
{
    std::vector<std::uint8_t> bytes = test::readAll(recordedTape_.toStdString());
    bytes.resize(bytes.size() * 6 / 10);
    const QString tape = QString::fromStdString(functionDir_->file("cut.zkdv"));
    test::writeAll(tape.toStdString(), bytes);
    QSignalSpy finished(window_.get(), &MainWindow::jobFinished);
    drop(*window_, {tape});
    auto [ok, message] = waitForJob(*window_, finished);
    QVERIFY(!ok);
    FindingBanner* banner = window_->findingBanner();
    QCOMPARE(banner->incompleteTapes(), QStringList{tape});
    QVERIFY(!QFileInfo::exists(QString::fromStdString(functionDir_->file("cut.zkaudit"))));
    const QString json = QString::fromStdString(functionDir_->file("cut-finding.json"));
    QVERIFY(window_->exportFindingReport(json));
    QCOMPARE(nlohmann::json::parse(test::readText(json.toStdString()))["conclusion"]["outcome"].get<std::string>(),
             std::string("INCOMPLETE TAPE"));
    // Taking the offer ingests what the tape holds up to the cut.
    QSignalSpy ingested(window_.get(), &MainWindow::jobFinished);
    QMetaObject::invokeMethod(banner, [banner] { Q_EMIT banner->ingestReadablePartRequested(banner->incompleteTapes()); });
    std::tie(ok, message) = waitForJob(*window_, ingested);
    QVERIFY2(ok, qPrintable(message));
    QVERIFY(!banner->isVisible());
    QCOMPARE(window_->casePath(), QString::fromStdString(functionDir_->file("cut.zkaudit")));
    CaseStore store(window_->casePath().toStdString(), CaseStore::Access::ReadOnly);
    QCOMPARE(store.tapes().size(), std::size_t(1));
    QCOMPARE(store.tapes().front().status, std::string("truncated"));
    QVERIFY(window_->transactionModel()->rowCount() > 0);
}

void TestMainWindow::movedTapeIsLocatedByItsChainHead()
{
    QVERIFY(openIngestedCase());
    const QString casePath = window_->casePath();
    window_->openCase(QString());
    const QString moved = QString::fromStdString(functionDir_->file("moved.zkdv"));
    QVERIFY(QFile::rename(tape_, moved));
    // Opening the case says which tape is missing, and where it was.
    QVERIFY(window_->openCase(casePath));
    MissingTapeBar* bar = window_->missingTapeBar();
    QVERIFY(bar->isVisible());
    QVERIFY(bar->isMissing(window_->currentTape()));
    QVERIFY2(bar->text().contains(QFileInfo(tape_).fileName()), qPrintable(bar->text()));
    // A replay is refused before any run is recorded.
    QVERIFY(!window_->startReplay(QStringLiteral("random:2"), 1));
    QVERIFY2(window_->statusBar()->currentMessage().contains(QStringLiteral("locate")), qPrintable(window_->statusBar()->currentMessage()));
    {
        CaseStore store(casePath.toStdString(), CaseStore::Access::ReadOnly);
        QVERIFY(ReplayStore(store.database()).runs().empty());
    }
    // Another tape is refused, and the case keeps the old path.
    QSignalSpy finished(window_.get(), &MainWindow::jobFinished);
    QVERIFY(window_->locateTape(window_->currentTape(), corrupt_));
    auto [ok, message] = waitForJob(*window_, finished);
    QVERIFY(!ok);
    QVERIFY2(message.contains(QStringLiteral("chain head")), qPrintable(message));
    QVERIFY(bar->isVisible());
    // The moved file is the same tape: the case follows it, and replays work again.
    QVERIFY(window_->locateTape(window_->currentTape(), moved));
    std::tie(ok, message) = waitForJob(*window_, finished);
    QVERIFY2(ok, qPrintable(message));
    QVERIFY(!bar->isVisible());
    {
        CaseStore store(casePath.toStdString(), CaseStore::Access::ReadOnly);
        QCOMPARE(QString::fromStdString(store.tapes().front().path), QFileInfo(moved).absoluteFilePath());
    }
    QVERIFY(window_->startReplay(QStringLiteral("random:2"), 1));
    std::tie(ok, message) = waitForJob(*window_, finished);
    QVERIFY2(ok, qPrintable(message));
}

void TestMainWindow::droppedNonTapeFileIsNamedInTheStatusBar()
{
    QVERIFY(openIngestedCase());
    QSignalSpy finished(window_.get(), &MainWindow::jobFinished);
    drop(*window_, {notes_});
    const auto [ok, message] = waitForJob(*window_, finished);
    QVERIFY(!ok);
    const QString status = window_->statusBar()->currentMessage();
    QVERIFY2(status.contains(QStringLiteral("notes.txt")) && status.contains(QStringLiteral("not a ZKDV tape")), qPrintable(status));
    QCOMPARE(window_->transactionModel()->rowCount(), kSteps);
}

void TestMainWindow::replayStartedFromTheWindow()
{
    QVERIFY(openIngestedCase());
    QSignalSpy finished(window_.get(), &MainWindow::jobFinished);
    QVERIFY(window_->startReplay(QStringLiteral("random:5"), 3));
    QSignalSpy progressed(window_->currentJob(), &BackgroundJob::progressed);
    // Ending a replay early keeps what was replayed: the button says Stop.
    QVERIFY(window_->currentJob()->interruption() == Interruption::Stop);
    checkInterruptLabels(*window_, QStringLiteral("Stop"));
    const auto [ok, message] = waitForJob(*window_, finished);
    QVERIFY2(ok, qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("passed")), qPrintable(message));
    QVERIFY(progressed.count() >= 1);
    const QList<QVariant> last = progressed.last();
    QCOMPARE(last.at(0).toULongLong(), last.at(1).toULongLong());  // the last report says done

    CaseStore store(window_->casePath().toStdString(), CaseStore::Access::ReadOnly);
    const std::vector<StoredReplayRun> runs = ReplayStore(store.database()).runs();
    QCOMPARE(runs.size(), std::size_t(1));
    QCOMPARE(runs[0].selectedCount, std::uint64_t(5));
    QCOMPARE(runs[0].exact, runs[0].replayed);
    // The table shows the verdicts; the chart marks every replayed transaction.
    TransactionTableModel* model = window_->transactionModel();
    int exact = 0;
    for (int row = 0; row < model->rowCount(); ++row)
        exact += model->index(row, TransactionTableModel::VerdictColumn).data(TransactionTableModel::DisplayNowRole).toString() == QStringLiteral("exact");
    QCOMPARE(static_cast<std::uint64_t>(exact), runs[0].replayed);
    QTRY_COMPARE(static_cast<std::uint64_t>(window_->charts()->verdictMarkerCount()), runs[0].replayed);
}

void TestMainWindow::sampleDialogProposesAFreshSeed()
{
    // A seed the trainer could guess voids the audit's bound (issue 26, item 1): the dialog
    // proposes a seed drawn from the operating system every time it opens, never 1 or the
    // last one, and the run records whether the auditor edited it.
    QVERIFY(openIngestedCase());
    QAction* sample = nullptr;
    for (QAction* action : window_->findChildren<QAction*>())
        if (action->text().startsWith(QStringLiteral("Replay Random S&ample")))
            sample = action;
    QVERIFY(sample);
    // Opens the dialog through the window's action; `answer` handles it once it shows.
    auto open = [&](const std::function<void(SampleDialog&)>& answer) {
        bool seen = false;
        QTimer::singleShot(0, window_.get(), [&] {
            SampleDialog* dialog = window_->findChild<SampleDialog*>();
            QVERIFY(dialog);
            seen = true;
            answer(*dialog);
        });
        sample->trigger();
        QVERIFY(seen);
    };
    std::vector<quint64> proposed;
    for (int round = 0; round < 3; ++round)
        open([&](SampleDialog& dialog) {
            QLineEdit* seedEdit = dialog.findChild<QLineEdit*>(QStringLiteral("seed"));
            QVERIFY(seedEdit);
            QCOMPARE(seedEdit->text(), QString::number(dialog.proposedSeed()));
            QCOMPARE(dialog.seed(), dialog.proposedSeed());
            QVERIFY(dialog.seedSource() == SeedSource::Drawn);
            proposed.push_back(dialog.proposedSeed());
            dialog.reject();
        });
    QCOMPARE(proposed.size(), std::size_t(3));
    for (std::size_t i = 0; i < proposed.size(); ++i) {
        QVERIFY2(proposed[i] != 1 && proposed[i] != 0, qPrintable(QString::number(proposed[i])));
        for (std::size_t j = 0; j < i; ++j)
            QVERIFY2(proposed[i] != proposed[j], qPrintable(QString::number(proposed[i])));
    }

    // Accepted as proposed: stored as drawn. Edited: stored as the auditor's, and the next
    // dialog does not propose the edited seed either.
    QSignalSpy finished(window_.get(), &MainWindow::jobFinished);
    quint64 accepted = 0;
    open([&](SampleDialog& dialog) {
        accepted = dialog.proposedSeed();
        dialog.accept();
    });
    auto [ok, message] = waitForJob(*window_, finished);
    QVERIFY2(ok, qPrintable(message));
    open([&](SampleDialog& dialog) {
        QLineEdit* seedEdit = dialog.findChild<QLineEdit*>(QStringLiteral("seed"));
        seedEdit->setText(QStringLiteral("99999999999999999999"));  // above 2^64 - 1
        QVERIFY(!dialog.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->isEnabled());
        seedEdit->setText(QStringLiteral("77"));
        QVERIFY(dialog.seedSource() == SeedSource::Given);
        dialog.accept();
    });
    std::tie(ok, message) = waitForJob(*window_, finished);
    QVERIFY2(ok, qPrintable(message));
    open([&](SampleDialog& dialog) {
        QVERIFY(dialog.proposedSeed() != 77 && dialog.proposedSeed() != accepted);
        dialog.reject();
    });
    CaseStore store(window_->casePath().toStdString(), CaseStore::Access::ReadOnly);
    const std::vector<StoredReplayRun> runs = ReplayStore(store.database()).runs();
    QCOMPARE(runs.size(), std::size_t(2));
    QCOMPARE(runs[0].seed, std::uint64_t(77));
    QVERIFY(runs[0].seedSource == SeedSource::Given);
    QCOMPARE(runs[1].seed, std::uint64_t(accepted));
    QVERIFY(runs[1].seedSource == SeedSource::Drawn);

    // The dialog's calibration field (docs/replay.md, "Calibration") is remembered for the
    // next replay; one that cannot be read stops the replay before anything is stored.
    const QString missing = QString::fromStdString(dir_.file("no-such-calibration.json"));
    open([&](SampleDialog& dialog) {
        PathField* field = dialog.findChild<PathField*>(QStringLiteral("calibration"));
        QVERIFY(field);
        QVERIFY(field->path().isEmpty());
        field->setPath(missing);
        QCOMPARE(dialog.calibrationPath(), missing);
        dialog.accept();
    });
    QCOMPARE(Settings::replayCalibration(), missing);
    QVERIFY2(window_->statusBar()->currentMessage().contains(QStringLiteral("no-such-calibration.json")),
             qPrintable(window_->statusBar()->currentMessage()));
    QCOMPARE(ReplayStore(store.database()).runs().size(), std::size_t(2));
    open([&](SampleDialog& dialog) {
        QCOMPARE(dialog.calibrationPath(), missing);
        dialog.reject();
    });
    Settings::setReplayCalibration(QString());
}

void TestMainWindow::laterRunKeepsEarlierResultsVisible()
{
    QVERIFY(openIngestedCase());
    QSignalSpy finished(window_.get(), &MainWindow::jobFinished);
    QVERIFY(window_->startReplay(QStringLiteral("random:5"), 3));
    auto [ok, message] = waitForJob(*window_, finished);
    QVERIFY2(ok, qPrintable(message));
    TransactionTableModel* model = window_->transactionModel();
    const auto replayed = [model] {
        QList<quint64> indexes;
        for (int row = 0; row < model->rowCount(); ++row)
            if (!model->index(row, TransactionTableModel::VerdictColumn).data(TransactionTableModel::DisplayNowRole).toString().isEmpty())
                indexes << model->transactionAt(row);
        return indexes;
    };
    const QList<quint64> first = replayed();
    QVERIFY(first.size() >= 5);  // the five selected, and prefixes replayed on the way to them
    quint64 other = 0;
    while (first.contains(other))
        ++other;
    // A small later run over another transaction: the earlier five stay in the table.
    QVERIFY(window_->startReplay(QStringLiteral("ids:%1").arg(other), 0));
    std::tie(ok, message) = waitForJob(*window_, finished);
    QVERIFY2(ok, qPrintable(message));
    QCOMPARE(window_->shownRun(), TransactionTable::kEveryRun);
    QSet<quint64> expected(first.begin(), first.end());
    QList<quint64> secondRun;
    {
        CaseStore store(window_->casePath().toStdString(), CaseStore::Access::ReadOnly);
        ReplayStore replays(store.database());
        for (const StoredVerdict& verdict : replays.verdicts(replays.runs().front().id))
            secondRun << verdict.index;
    }
    expected.unite(QSet<quint64>(secondRun.begin(), secondRun.end()));
    const QList<quint64> both = replayed();
    QCOMPARE(QSet<quint64>(both.begin(), both.end()), expected);
    QVERIFY(both.contains(other));
    // The run list names both runs; choosing one shows only its results, and All runs again.
    RunList* runs = window_->runList();
    QCOMPARE(runs->runCount(), 2);
    const qint64 newest = runs->topLevelItem(1)->data(RunList::RunColumn, Qt::UserRole).toLongLong();
    runs->setCurrentItem(runs->topLevelItem(1));
    QCOMPARE(window_->shownRun(), newest);
    QCOMPARE(model->runId(), newest);
    QCOMPARE(replayed(), secondRun);
    QTRY_COMPARE(window_->charts()->verdictMarkerCount(), int(secondRun.size()));
    runs->setCurrentItem(runs->topLevelItem(0));
    QCOMPARE(window_->shownRun(), TransactionTable::kEveryRun);
    QCOMPARE(replayed().size(), int(expected.size()));
    QTRY_COMPARE(window_->charts()->verdictMarkerCount(), int(expected.size()));
    // No verdict cell in view is cut.
    QTableView* table = window_->transactionView();
    table->scrollTo(model->index(model->rowOfTransaction(other), 0));
    QTRY_VERIFY(!model->index(model->rowOfTransaction(other), TransactionTableModel::VerdictColumn).data().toString().isEmpty());
    QTest::qWait(50);
    const int width = table->horizontalHeader()->sectionSize(TransactionTableModel::VerdictColumn);
    for (int row = table->rowAt(0); row >= 0 && row <= table->rowAt(table->viewport()->height() - 1); ++row) {
        const QString text = model->index(row, TransactionTableModel::VerdictColumn).data().toString();
        QVERIFY2(table->fontMetrics().horizontalAdvance(text) <= width, qPrintable(text));
    }
}

void TestMainWindow::tableExportsAsShownToCsv()
{
    QVERIFY(openIngestedCase());
    QSignalSpy finished(window_.get(), &MainWindow::jobFinished);
    QVERIFY(window_->startReplay(QStringLiteral("random:5"), 3));
    auto [ok, message] = waitForJob(*window_, finished);
    QVERIFY2(ok, qPrintable(message));
    // Filtered and sorted as shown: replayed transactions, by loss descending.
    TransactionTableModel* model = window_->transactionModel();
    model->setTextFilter(QStringLiteral("replayed"));
    model->sort(TransactionTableModel::LossColumn, Qt::DescendingOrder);
    QVERIFY(model->rowCount() >= 5 && model->rowCount() < kSteps);
    const QString path = QString::fromStdString(functionDir_->file("table.csv"));
    QVERIFY(window_->exportTableCsv(path));
    std::tie(ok, message) = waitForJob(*window_, finished);
    QVERIFY2(ok, qPrintable(message));
    const QStringList lines = QString::fromStdString(test::readText(path.toStdString())).split(QStringLiteral("\r\n"), Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), model->rowCount() + 1);
    QVERIFY(lines.front().startsWith(QStringLiteral("index,loss,lr,")));
    for (int row = 0; row < model->rowCount(); ++row) {
        const QStringList fields = lines[row + 1].split(QLatin1Char(','));
        QCOMPARE(fields.value(0).toULongLong(), model->transactionAt(row));
        QCOMPARE(fields.value(8), QStringLiteral("exact"));
    }
}

void TestMainWindow::everyActionHasAShortcut()
{
    int checked = 0;
    for (QAction* action : window_->actions()) {
        if (action->isSeparator())
            continue;
        QVERIFY2(!action->shortcut().isEmpty(), qPrintable(action->text()));
        ++checked;
    }
    QVERIFY(checked >= 12);
}

void TestMainWindow::recentFilesRemembered()
{
    // A dropped tape and the case it was ingested into are both remembered.
    QVERIFY(Settings::recentFiles().isEmpty());
    QSignalSpy finished(window_.get(), &MainWindow::jobFinished);
    drop(*window_, {tape_});
    const auto [ok, message] = waitForJob(*window_, finished);
    QVERIFY2(ok, qPrintable(message));
    const QStringList recent = Settings::recentFiles();
    QVERIFY2(recent.contains(QFileInfo(window_->casePath()).absoluteFilePath()), qPrintable(recent.join(QLatin1Char(','))));
    QVERIFY(recent.contains(QFileInfo(tape_).absoluteFilePath()));
}

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
