// The workstation around the case (offscreen): the start page with the recent files when no
// case is open, the message log that keeps every status message whole, and the built-in help
// (F1) whose shortcut table is the window's own actions. Every function gets a new window and
// passes alone and in any order.

#include <QtTest>

#include <QTabBar>

#include <QAction>
#include <QBrush>
#include <QClipboard>
#include <QComboBox>
#include <QFile>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QListWidget>
#include <QMenuBar>
#include <QStatusBar>
#include <QTableView>
#include <QTextBrowser>

#include <qcustomplot.h>

#include <map>
#include <set>

#include "dialogs/help_dialog.h"
#include "jobs/background_job.h"
#include "main_window.h"
#include "widgets/run_list.h"
#include "models/transaction_table_model.h"
#include "plots/chart_panel.h"
#include "plots/chart_text_room.h"
#include "widgets/transaction_detail_pane.h"
#include "settings/settings.h"
#include "temp_dir.h"
#include "widgets/case_overview.h"
#include "widgets/eliding_status_bar.h"
#include "widgets/message_log.h"
#include "widgets/record_bytes_pane.h"
#include "widgets/finding_banner.h"
#include "widgets/start_page.h"
#include "widgets/tape_header.h"
#include "widgets/transaction_table_view.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/transaction_notes.h"
#include "zkdv/tape/record_dissection.h"
#include "file_bytes.h"

using namespace zkdv;
using namespace zkdv::ui;

namespace {

QAction* actionWithShortcut(QWidget& window, const QKeySequence& keys)
{
    for (QAction* action : window.findChildren<QAction*>())
        if (action->shortcut() == keys)
            return action;
    return nullptr;
}

}  // namespace

class TestWorkstationShell : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void cleanup();
    void withoutACaseTheStartPageListsTheRecentFiles();
    void choosingARecentCaseOpensIt();
    void closingTheCaseShowsTheStartPageAgain();
    void everyStatusMessageIsKeptWholeInTheLog();
    void f1OpensHelpListingEveryShortcut();
    void everyChartTabHasAShortcut();
    void chartsFollowTheSelectedRowNotTheFocusedOne();
    void statusBarCountsTheFilteredRowsAndAnEmptyTableSaysWhy();
    void caseTreeKeepsItsExpansionWhenShownAgain();
    void aResumedRunShowsItsLinkAndNumbersAcrossTapes();
    void theCaseTreeSaysWhoSignedATapeAndWhetherTheKeyIsTrusted();
    void tabWalksThePanesInOrderAndLeavesTheTable();
    void copyTakesValuesAndRows();
    void everyKeySequenceBelongsToOneAction();
    void aLongMessageStopsBeforeTheRowCounterAndAProblemGoesWithItsCase();
    void displayFiltersApplyAndABadOneSaysWhereWithoutLosingTheRows();
    void everyPaneHasRoomAt1024x700();
    void recordBytesFollowTheSelectionAndTheFinding();

private:
    test::TempDir dir_;
    QString firstCase_, secondCase_;
    std::unique_ptr<MainWindow> window_;
};

void TestWorkstationShell::initTestCase()
{
    QCoreApplication::setOrganizationName(QStringLiteral("zkdv-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("test_workstation_shell"));
    SyntheticDemoOptions options;
    options.steps = 30;
    writeSyntheticDemoTape(dir_.file("demo.zkdv"), options);
    firstCase_ = QString::fromStdString(dir_.file("first.zkaudit"));
    secondCase_ = QString::fromStdString(dir_.file("second.zkaudit"));
    for (const QString& path : {firstCase_, secondCase_}) {
        CaseStore store(path.toStdString(), CaseStore::Access::ReadWrite);
        const std::int64_t tape = store.ingestTape(dir_.file("demo.zkdv")).tapeId;
        // A note longer than any column: the layout test's text column to cut.
        TransactionNotes(store.database(), tape)
            .set(0, TransactionFlag::Question, std::string(20, 'x') + " ask the trainer why the loss of this step is lower than the one before it, twice");
    }
}

void TestWorkstationShell::init()
{
    Settings::setTransactionColumns({});
    Settings::clearRecentFiles();
    Settings::addRecentFile(firstCase_);
    Settings::addRecentFile(secondCase_);  // most recent first
    window_ = std::make_unique<MainWindow>();
    window_->resize(1024, 700);
    window_->show();
    QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
}

void TestWorkstationShell::cleanup()
{
    window_.reset();
    Settings::clearRecentFiles();
}

void TestWorkstationShell::everyPaneHasRoomAt1024x700()
{
    // Also run with QT_SCALE_FACTOR=1.5 (ctest test_workstation_shell_scale_1_5): the same
    // 1024x700 logical pixels are then 1536x1050 device pixels, fonts scaled alike.
    QVERIFY(window_->openCase(firstCase_));
    window_->resize(1024, 700);
    QTest::qWait(50);
    QVERIFY2(window_->minimumSizeHint().width() <= 1024 && window_->minimumSizeHint().height() <= 700,
             qPrintable(QStringLiteral("%1x%2").arg(window_->minimumSizeHint().width()).arg(window_->minimumSizeHint().height())));
    QCOMPARE(window_->size(), QSize(1024, 700));
    const int row = window_->transactionView()->verticalHeader()->defaultSectionSize();
    QVERIFY2(window_->transactionView()->viewport()->height() >= 6 * row,
             qPrintable(QString::number(window_->transactionView()->viewport()->height())));
    QVERIFY2(window_->charts()->height() >= 160, qPrintable(QString::number(window_->charts()->height())));
    QVERIFY(window_->runList()->isVisible());
    QVERIFY2(window_->runList()->viewport()->height() >= 2 * row, qPrintable(QString::number(window_->runList()->viewport()->height())));
    auto* filter = window_->findChild<QLineEdit*>(QStringLiteral("textFilter"));
    QVERIFY(filter && filter->width() >= 200);
    // Nothing shown is squeezed to nothing.
    for (QWidget* widget : window_->findChildren<QWidget*>()) {
        if (!widget->isVisible() || widget->isWindow() || widget->sizePolicy().horizontalPolicy() == QSizePolicy::Ignored)
            continue;
        QVERIFY2(widget->width() > 0 && widget->height() > 0, qPrintable(widget->metaObject()->className() + QStringLiteral(" ") + widget->objectName()));
    }

    // The default layout: the detail pane open beside the table, and what an auditor reads
    // first in view without scrolling: the verdict, the worst divergence and the note.
    QVERIFY(window_->detailPane()->isVisible());
    QTRY_VERIFY2(window_->detailPane()->width() >= 300, qPrintable(QString::number(window_->detailPane()->width())));
    TransactionTableView* table = window_->transactionView();
    QTRY_VERIFY(!table->model()->index(0, TransactionTableModel::LossColumn).data().toString().isEmpty());
    QTest::qWait(50);
    QHeaderView* header = table->horizontalHeader();
    auto name = [&](int column) { return table->model()->headerData(column, Qt::Horizontal).toString(); };
    for (int column : {int(TransactionTableModel::VerdictColumn), int(TransactionTableModel::WorstDivergenceColumn), int(TransactionTableModel::NoteColumn)}) {
        QVERIFY2(!header->isSectionHidden(column), qPrintable(name(column)));
        const int left = header->sectionViewportPosition(column);
        QVERIFY2(left >= 0 && left + header->sectionSize(column) <= table->viewport()->width(),
                 qPrintable(QStringLiteral("%1 at %2+%3 of %4").arg(name(column)).arg(left).arg(header->sectionSize(column)).arg(table->viewport()->width())));
    }
    // Columns fit their header and the rows in view; the text columns up to their share of
    // the view (a long note, transaction 0's, is cut there: whole in its tooltip and the pane).
    for (int column = 0; column < TransactionTableModel::ColumnCount; ++column) {
        if (header->isSectionHidden(column))
            continue;
        const int needed = std::min(table->neededWidth(column), table->widthLimit(column));
        QVERIFY2(header->sectionSize(column) >= needed && header->sectionSize(column) >= header->sectionSizeHint(column),
                 qPrintable(QStringLiteral("%1: %2 wide, needs %3").arg(name(column)).arg(header->sectionSize(column)).arg(needed)));
    }
    QVERIFY2(table->neededWidth(TransactionTableModel::NoteColumn) > header->sectionSize(TransactionTableModel::NoteColumn),
             "the long note is cut to its share");

    // Every chart tab in view beside the comparison box, none behind scroll arrows.
    QTabBar* tabs = window_->charts()->tabBar();
    QWidget* corner = window_->charts()->cornerWidget(Qt::TopRightCorner);
    QVERIFY(corner && corner->isVisible());
    QVERIFY2(tabs->geometry().right() < corner->geometry().left(),
             qPrintable(QStringLiteral("tabs end at %1, the box starts at %2").arg(tabs->geometry().right()).arg(corner->geometry().left())));
    for (int tab = 0; tab < tabs->count(); ++tab)
        QVERIFY2(tabs->rect().contains(tabs->tabRect(tab)),
                 qPrintable(QStringLiteral("tab \"%1\" at %2+%3 of %4").arg(tabs->tabText(tab)).arg(tabs->tabRect(tab).left()).arg(tabs->tabRect(tab).width()).arg(tabs->width())));

    // No text shown runs out of its place: labels, and the charts' tick labels, titles and
    // legends (ChartTextRoom).
    for (QLabel* label : window_->findChildren<QLabel*>()) {
        if (!label->isVisible() || label->text().isEmpty() || Qt::mightBeRichText(label->text()))
            continue;
        const QRect room = label->contentsRect();
        const QRect needed =
            label->fontMetrics().boundingRect(room, int(label->alignment()) | (label->wordWrap() ? Qt::TextWordWrap : 0), label->text());
        QVERIFY2(needed.width() <= room.width() + 1 && needed.height() <= room.height() + 1,
                 qPrintable(QStringLiteral("label \"%1\" (%2): needs %3x%4, has %5x%6")
                                .arg(label->text(), label->objectName()).arg(needed.width()).arg(needed.height()).arg(room.width()).arg(room.height())));
    }
    for (QCustomPlot* plot : window_->findChildren<QCustomPlot*>()) {
        if (!plot->isVisible())
            continue;
        plot->replot();
        QTRY_VERIFY2(ChartTextRoom::crowdedText(plot).isEmpty(),
                     qPrintable(plot->metaObject()->className() + QStringLiteral(": ") + ChartTextRoom::crowdedText(plot).join(QStringLiteral("; "))));
    }
}

void TestWorkstationShell::withoutACaseTheStartPageListsTheRecentFiles()
{
    QVERIFY(window_->showsStartPage());
    QVERIFY(window_->startPage()->isVisible());
    QListWidget* recent = window_->startPage()->recentList();
    QCOMPARE(recent->count(), 2);
    QVERIFY2(recent->item(0)->text().startsWith(QStringLiteral("second.zkaudit")), qPrintable(recent->item(0)->text()));
    QVERIFY(recent->item(1)->text().startsWith(QStringLiteral("first.zkaudit")));
    QCOMPARE(recent->item(0)->toolTip(), QFileInfo(secondCase_).absoluteFilePath());

    // With no recent files the page says so (and offers nothing to click).
    Settings::clearRecentFiles();
    window_->startPage()->refresh();
    QCOMPARE(recent->count(), 1);
    QCOMPARE(recent->item(0)->flags(), Qt::NoItemFlags);
}

void TestWorkstationShell::choosingARecentCaseOpensIt()
{
    QListWidget* recent = window_->startPage()->recentList();
    QSignalSpy changed(window_.get(), &MainWindow::caseChanged);
    recent->setFocus();
    recent->setCurrentRow(1);
    QTest::keyClick(recent, Qt::Key_Return);  // Enter activates, as a double-click does
    QCOMPARE(changed.count(), 1);
    QCOMPARE(QFileInfo(window_->casePath()).fileName(), QStringLiteral("first.zkaudit"));
    QVERIFY(!window_->showsStartPage());
    QVERIFY(window_->transactionView()->isVisible());
    // It moved to the top of the recent files, and the page will show it first.
    QCOMPARE(QFileInfo(Settings::recentFiles().value(0)).fileName(), QStringLiteral("first.zkaudit"));
    QVERIFY(recent->item(0)->text().startsWith(QStringLiteral("first.zkaudit")));
}

void TestWorkstationShell::closingTheCaseShowsTheStartPageAgain()
{
    QVERIFY(window_->openCase(firstCase_));
    QVERIFY(!window_->showsStartPage());
    QAction* close = actionWithShortcut(*window_, QKeySequence(Qt::CTRL | Qt::Key_W));
    QVERIFY(close);
    close->trigger();
    QVERIFY(window_->casePath().isEmpty());
    QVERIFY(window_->showsStartPage());
}

void TestWorkstationShell::everyStatusMessageIsKeptWholeInTheLog()
{
    MessageLog* log = window_->messageLog();
    QVERIFY(log->isVisible());
    const int before = log->messages().size();
    // A file that is neither a case nor a tape: the status bar says so and moves on; the log
    // keeps the whole message, however long.
    const QString longName = QString::fromStdString(dir_.file(std::string(180, 'n') + ".txt"));
    QFile file(longName);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write("not a tape\n");
    file.close();
    window_->openPaths({longName});
    const QString shown = window_->statusBar()->currentMessage();
    QVERIFY2(shown.contains(QFileInfo(longName).fileName()), qPrintable(shown));
    QVERIFY(log->messages().size() > before);
    QCOMPARE(log->messages().last(), shown);
    // The status bar forgets the message after its timeout; the log does not.
    window_->statusBar()->clearMessage();
    QCOMPARE(log->messages().last(), shown);

    // View ▸ Messages (Ctrl+Shift+M) hides and shows the log.
    QAction* toggle = actionWithShortcut(*window_, QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_M));
    QVERIFY(toggle);
    toggle->trigger();
    QVERIFY(!log->isVisible());
    toggle->trigger();
    QVERIFY(log->isVisible());
}

void TestWorkstationShell::f1OpensHelpListingEveryShortcut()
{
    QAction* help = actionWithShortcut(*window_, QKeySequence(QKeySequence::HelpContents));
    QVERIFY(help);
    QVERIFY(help->text().contains(QStringLiteral("Help")));
    // About is still in the Help menu, on another key.
    QAction* about = actionWithShortcut(*window_, QKeySequence(Qt::SHIFT | Qt::Key_F1));
    QVERIFY(about && about->text().contains(QStringLiteral("About")));

    help->trigger();
    auto* dialog = window_->findChild<HelpDialog*>();
    QVERIFY(dialog);
    QVERIFY(dialog->isVisible());
    const QString markdown = dialog->markdown();
    QVERIFY(markdown.contains(QStringLiteral("## Shortcuts")));
    // Every menu action with a shortcut is in the table, with its keys.
    int listed = 0;
    for (QAction* menu : window_->menuBar()->actions())
        for (QAction* action : menu->menu()->actions()) {
            if (action->shortcut().isEmpty())
                continue;
            const QString row = QStringLiteral("| %1 | %2 |").arg(action->shortcut().toString(QKeySequence::NativeText), QString(action->text()).remove(QLatin1Char('&')));
            QVERIFY2(markdown.contains(row), qPrintable(row));
            ++listed;
        }
    QVERIFY(listed > 10);
    // And the charts' own (export, reset zoom).
    QVERIFY(markdown.contains(QStringLiteral("Export Chart as PNG")));
    QVERIFY(dialog->findChild<QTextBrowser*>(QStringLiteral("helpText"))->toPlainText().contains(QStringLiteral("An audit")));
}

void TestWorkstationShell::everyChartTabHasAShortcut()
{
    QVERIFY(window_->openCase(firstCase_));
    ChartPanel* charts = window_->charts();
    QVERIFY(charts->count() >= 5);
    for (int i = charts->count() - 1; i >= 0; --i) {
        QAction* tab = actionWithShortcut(*window_, QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)));
        QVERIFY2(tab, qPrintable(QString::number(i)));
        tab->trigger();
        QCOMPARE(charts->currentIndex(), i);
        QCOMPARE(tab->text(), charts->currentWidget()->accessibleName() + QStringLiteral(" Chart"));
    }
}

void TestWorkstationShell::chartsFollowTheSelectedRowNotTheFocusedOne()
{
    QVERIFY(window_->openCase(firstCase_));
    QTableView* table = window_->transactionView();
    QTRY_VERIFY(table->model()->rowCount() >= 10);
    QItemSelectionModel* selection = table->selectionModel();
    const auto row = [&](int r) { return table->model()->index(r, 0); };
    selection->select(row(5), QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    QCOMPARE(window_->charts()->selectedTransaction(), std::optional<quint64>(window_->transactionModel()->transactionAt(5)));
    // The focus moves (Ctrl+click, arrow keys with Ctrl) without selecting: the charts stay.
    selection->setCurrentIndex(row(8), QItemSelectionModel::NoUpdate);
    QCOMPARE(window_->charts()->selectedTransaction(), std::optional<quint64>(window_->transactionModel()->transactionAt(5)));
    // Focus on a selected row among several: that row.
    selection->select(row(8), QItemSelectionModel::Select | QItemSelectionModel::Rows);
    QCOMPARE(window_->charts()->selectedTransaction(), std::optional<quint64>(window_->transactionModel()->transactionAt(8)));
    // Nothing selected: nothing highlighted.
    selection->clearSelection();
    QCOMPARE(window_->charts()->selectedTransaction(), std::optional<quint64>());
}

void TestWorkstationShell::statusBarCountsTheFilteredRowsAndAnEmptyTableSaysWhy()
{
    QVERIFY(window_->openCase(firstCase_));
    auto* count = window_->findChild<QLabel*>(QStringLiteral("rowCount"));
    auto* empty = window_->findChild<QLabel*>(QStringLiteral("emptyState"));
    auto* filter = window_->findChild<QLineEdit*>(QStringLiteral("textFilter"));
    auto* quick = window_->findChild<QComboBox*>(QStringLiteral("quickFilter"));
    QVERIFY(count && empty && filter && quick);
    QTRY_COMPARE(count->text(), QStringLiteral("30 transactions"));
    QVERIFY(!empty->isVisible());

    // A range filter: 10 of the 30.
    filter->setText(QStringLiteral("10-19"));
    QTRY_COMPARE(window_->transactionModel()->rowCount(), 10);
    QTRY_COMPARE(count->text(), QStringLiteral("10 of 30 transactions"));
    QVERIFY(!empty->isVisible());

    // Nothing replayed yet, so nothing diverged: the table says so over its empty rows.
    filter->clear();
    quick->setCurrentIndex(1);
    QTRY_COMPARE(window_->transactionModel()->rowCount(), 0);
    QTRY_COMPARE(count->text(), QStringLiteral("0 of 30 transactions"));
    QVERIFY(empty->isVisible());
    QVERIFY2(empty->text().contains(QStringLiteral("No transaction matches the filter (Diverged)")), qPrintable(empty->text()));
    quick->setCurrentIndex(0);
    QTRY_COMPARE(count->text(), QStringLiteral("30 transactions"));
    QVERIFY(!empty->isVisible());
}

void TestWorkstationShell::caseTreeKeepsItsExpansionWhenShownAgain()
{
    QVERIFY(window_->openCase(firstCase_));
    auto* tree = window_->findChild<CaseOverview*>();
    QVERIFY(tree);
    const auto find = [&](const QString& label) {
        const QModelIndexList found = tree->model()->match(tree->model()->index(0, 0), Qt::DisplayRole, label, 1, Qt::MatchRecursive | Qt::MatchExactly);
        return found.value(0);
    };
    const QModelIndex tape = tree->model()->index(0, 0);
    QVERIFY(tree->isExpanded(tape));  // a tape opens expanded
    QVERIFY(find(QStringLiteral("Model")).isValid());
    QVERIFY(!tree->isExpanded(find(QStringLiteral("Model"))));
    tree->expand(find(QStringLiteral("Model")));
    tree->expand(find(QStringLiteral("Optimizer")));
    tree->collapse(find(QStringLiteral("Optimizer")));
    // What a replay's end or an ingest does: the tree is built again from the case.
    QVERIFY(tree->showCase(window_->casePath()));
    QVERIFY(tree->isExpanded(find(QStringLiteral("Model"))));
    QVERIFY(!tree->isExpanded(find(QStringLiteral("Optimizer"))));
    tree->collapse(tree->model()->index(0, 0));
    QVERIFY(tree->showCase(window_->casePath()));
    QVERIFY(!tree->isExpanded(tree->model()->index(0, 0)));
    // Another case starts afresh.
    QVERIFY(window_->openCase(secondCase_));
    QVERIFY(tree->isExpanded(tree->model()->index(0, 0)));
    QVERIFY(!tree->isExpanded(find(QStringLiteral("Model"))));
}

// A run resumed from a checkpoint (the golden 1.10 pair, 7 + 7 transactions): the case tree
// says where the second tape stands in the run and that its link holds, and its table numbers
// each transaction on the tape and in the run.
void TestWorkstationShell::aResumedRunShowsItsLinkAndNumbersAcrossTapes()
{
    const QString casePath = QString::fromStdString(dir_.file("resumed.zkaudit"));
    std::int64_t first = 0, second = 0;
    {
        CaseStore store(casePath.toStdString(), CaseStore::Access::ReadWrite);
        second = store.ingestTape(ZKDV_TEST_DATA_DIR "/golden/mlp-resumed-second-1.10.zkdv").tapeId;
        first = store.ingestTape(ZKDV_TEST_DATA_DIR "/golden/mlp-resumed-first-1.10.zkdv").tapeId;
    }
    QVERIFY(window_->openCase(casePath));
    auto* tree = window_->findChild<CaseOverview*>();
    QVERIFY(tree);
    const QModelIndexList found =
        tree->model()->match(tree->model()->index(0, 0), Qt::DisplayRole, QStringLiteral("Resumed run"), -1, Qt::MatchRecursive | Qt::MatchExactly);
    QCOMPARE(found.size(), 1);  // the first tape starts the run and says nothing of it
    const QString value = found.front().siblingAtColumn(1).data().toString();
    QVERIFY2(value.contains(QStringLiteral("transactions 7–13 of the run")) &&
                 value.contains(QStringLiteral("continues tape %1 (the link holds)").arg(first)),
             qPrintable(value));
    TransactionTableModel model;
    model.setCase(casePath, second);
    QCOMPARE(model.data(model.index(0, TransactionTableModel::IndexColumn)).toString(), QStringLiteral("0 (run 7)"));
    model.setCase(casePath, first);
    QCOMPARE(model.data(model.index(0, TransactionTableModel::IndexColumn)).toString(), QStringLiteral("0"));
}

// The golden 1.11 tape, signed by a key whose public half is committed beside it: the case
// tree names the signer, in red until that key is in the auditor's trainer keyring.
void TestWorkstationShell::theCaseTreeSaysWhoSignedATapeAndWhetherTheKeyIsTrusted()
{
    const QString config = QString::fromStdString(dir_.file("signer-config"));
    qputenv("ZKDV_CONFIG_HOME", config.toUtf8());
    const QString casePath = QString::fromStdString(dir_.file("signed.zkaudit"));
    {
        CaseStore store(casePath.toStdString(), CaseStore::Access::ReadWrite);
        store.ingestTape(ZKDV_TEST_DATA_DIR "/golden/cnn-adam-signed-1.11.zkdv");
        store.ingestTape(ZKDV_TEST_DATA_DIR "/golden/cnn-adam-1.5.zkdv");
    }
    auto signedBy = [this] {
        auto* tree = window_->findChild<CaseOverview*>();
        QStringList values;
        for (const QModelIndex& found :
             tree->model()->match(tree->model()->index(0, 0), Qt::DisplayRole, QStringLiteral("Signed by"), -1, Qt::MatchRecursive | Qt::MatchExactly))
            values << found.siblingAtColumn(1).data().toString();
        return values;
    };
    // The line above the table says it too, for the tape the table shows.
    auto header = [this] { return window_->tapeHeader()->signatureText(); };
    auto showTape = [this](int row) {
        auto* tree = window_->findChild<CaseOverview*>();
        tree->selectionModel()->setCurrentIndex(tree->model()->index(row, 0), QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    };
    QVERIFY(window_->openCase(casePath));
    QStringList values = signedBy();
    QCOMPARE(values.size(), 2);
    QVERIFY2(values[0].contains(QStringLiteral("not in your trainer keyring")) && values[0].contains(QStringLiteral("17b5efb1")), qPrintable(values[0]));
    QCOMPARE(values[1], QStringLiteral("not signed"));
    QCOMPARE(window_->currentTape(), 1);
    QCOMPARE(header(), QStringLiteral("Signed by an unknown key 17b5efb1…"));
    QVERIFY(window_->tapeHeader()->titleText().endsWith(QStringLiteral("cnn-adam-signed-1.11.zkdv")));
    showTape(1);
    QCOMPARE(window_->currentTape(), 2);
    QCOMPARE(header(), QStringLiteral("Unsigned"));

    QVERIFY(QDir().mkpath(config + QStringLiteral("/trainer-keys")));
    QVERIFY(QFile::copy(QStringLiteral(ZKDV_TEST_DATA_DIR "/golden/cnn-adam-signed-1.11.trainer-key.pem"), config + QStringLiteral("/trainer-keys/trainer.pem")));
    QVERIFY(window_->openCase(casePath));
    values = signedBy();
    QVERIFY2(values.value(0).startsWith(QStringLiteral("a trusted trainer key (trainer.pem)")), qPrintable(values.value(0)));
    // A keyring that holds keys expects signatures: the unsigned tape (a stripped one reads so)
    // is now as red as an unknown key, in the tree and in the line above the table.
    QVERIFY2(values.value(1).startsWith(QStringLiteral("not signed, though your trainer keyring")), qPrintable(values.value(1)));
    auto* tree = window_->findChild<CaseOverview*>();
    const QModelIndexList unsignedRow =
        tree->model()->match(tree->model()->index(1, 0), Qt::DisplayRole, QStringLiteral("Signed by"), 1, Qt::MatchRecursive | Qt::MatchExactly);
    QCOMPARE(unsignedRow.size(), qsizetype(1));
    QCOMPARE(unsignedRow[0].data(Qt::ForegroundRole).value<QBrush>().color(), QColor(0xb0, 0x00, 0x20));
    // the case opened again on the tape shown before
    QCOMPARE(header(), QStringLiteral("Unsigned, though your trainer keyring expects a signature"));
    showTape(0);
    QCOMPARE(header(), QStringLiteral("Signed by trusted key 17b5efb1…"));
    qunsetenv("ZKDV_CONFIG_HOME");
}

void TestWorkstationShell::tabWalksThePanesInOrderAndLeavesTheTable()
{
    QVERIFY(window_->openCase(firstCase_));
    window_->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(window_.get()));
    auto* filter = window_->findChild<QLineEdit*>(QStringLiteral("textFilter"));
    filter->setFocus();
    QTRY_COMPARE(QApplication::focusWidget(), filter);
    QList<QWidget*> visited;
    for (int i = 0; i < 6; ++i) {
        QTest::keyClick(QApplication::focusWidget(), Qt::Key_Tab);
        visited << QApplication::focusWidget();
    }
    QCOMPARE(visited.value(0), window_->transactionView());
    // One Tab leaves the table (no walk through its cells) for the charts.
    QVERIFY2(visited.value(1) && window_->charts()->isAncestorOf(visited.value(1)), visited.value(1) ? visited.value(1)->metaObject()->className() : "none");
    // Further on: the case tree, before the walk comes round.
    const int tree = visited.indexOf(window_->findChild<CaseOverview*>());
    QVERIFY2(tree > 1, qPrintable(QString::number(tree)));
}

void TestWorkstationShell::copyTakesValuesAndRows()
{
    QVERIFY(window_->openCase(firstCase_));
    std::string programSha;
    {
        CaseStore store(firstCase_.toStdString(), CaseStore::Access::ReadOnly);
        programSha = store.tapes().at(0).programSha256;
    }
    auto* tree = window_->findChild<CaseOverview*>();
    const QModelIndex program =
        tree->model()->match(tree->model()->index(0, 0), Qt::DisplayRole, QStringLiteral("Program"), 1, Qt::MatchRecursive | Qt::MatchExactly).value(0);
    QVERIFY(program.isValid());
    QVERIFY(program.siblingAtColumn(1).data().toString().contains(QStringLiteral(" — ")));  // the cell says more than the digest
    tree->selectionModel()->select(program, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    QCOMPARE(tree->copyText(false), QString::fromStdString(programSha));
    QCOMPARE(tree->copyText(true), QStringLiteral("Program\t") + program.siblingAtColumn(1).data().toString());

    QTableView* table = window_->transactionView();
    QTRY_VERIFY(table->model()->rowCount() >= 10);
    table->selectionModel()->select(QItemSelection(table->model()->index(2, 0), table->model()->index(4, 0)),
                                    QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    // Edit > Copy (Ctrl+C) copies from the pane with the focus.
    QAction* copy = nullptr;
    for (QAction* action : window_->findChildren<QAction*>())
        if (action->shortcut() == QKeySequence(QKeySequence::Copy))
            copy = action;
    QVERIFY(copy);
    window_->activateWindow();
    table->setFocus();
    QTRY_VERIFY(table->hasFocus());
    QApplication::clipboard()->clear();
    copy->trigger();
    const QStringList lines = QApplication::clipboard()->text().split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 4);
    // The rows as shown: the header's order, without the columns hidden.
    QHeaderView* header = table->horizontalHeader();
    header->moveSection(header->visualIndex(TransactionTableModel::LossColumn), 1);
    header->setSectionHidden(TransactionTableModel::SegmentColumn, true);
    QApplication::clipboard()->clear();
    copy->trigger();
    const QStringList shown = QApplication::clipboard()->text().split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(shown.size(), 4);
    const QStringList columns = shown[0].split(QLatin1Char('\t'));
    QCOMPARE(columns.size(), TransactionTableModel::ColumnCount - 1);
    QCOMPARE(columns.value(0), QStringLiteral("Index"));
    QCOMPARE(columns.value(1), QStringLiteral("Loss"));
    QVERIFY(!columns.contains(QStringLiteral("Segment")));
    for (int i = 0; i < 3; ++i) {
        QCOMPARE(shown[i + 1].section(QLatin1Char('\t'), 0, 0), QString::number(window_->transactionModel()->transactionAt(2 + i)));
        QCOMPARE(shown[i + 1].section(QLatin1Char('\t'), 1, 1),
                 window_->transactionModel()->index(2 + i, TransactionTableModel::LossColumn).data().toString());
    }
    static_cast<TransactionTableView*>(table)->resetColumns();
}

// One action per key sequence, wherever it is bound (menus, panes, every chart): two actions
// on one key leave the user guessing which runs. Charts repeat the same actions, so actions
// are told apart by their text. And the Help table, generated from the actions, lists each.
void TestWorkstationShell::everyKeySequenceBelongsToOneAction()
{
    QVERIFY(window_->openCase(firstCase_));
    std::map<QString, std::set<QString>> actionsOfKey;
    for (QAction* action : window_->findChildren<QAction*>()) {
        QString text = action->text();
        text.remove(QLatin1Char('&'));
        for (const QKeySequence& key : action->shortcuts())
            if (!key.isEmpty())
                actionsOfKey[key.toString(QKeySequence::PortableText)].insert(text);
    }
    QVERIFY(actionsOfKey.size() > 20);
    QStringList duplicates;
    for (const auto& [key, texts] : actionsOfKey)
        if (texts.size() > 1)
            duplicates << key + QStringLiteral(": ") + QStringList(texts.begin(), texts.end()).join(QStringLiteral(", "));
    QVERIFY2(duplicates.isEmpty(), qPrintable(duplicates.join(QStringLiteral("; "))));

    HelpDialog help(window_.get());
    for (const auto& [key, texts] : actionsOfKey) {
        const QString shown = QKeySequence(key, QKeySequence::PortableText).toString(QKeySequence::NativeText);
        QVERIFY2(help.markdown().contains(QStringLiteral("| ") + shown + QStringLiteral(" | ")), qPrintable(shown + QStringLiteral(" is not in Help")));
    }
}

// A message too long for the status bar ends in "…" left of the row counter (whole in its
// tooltip), and a problem shown to stay goes when its case does.
void TestWorkstationShell::aLongMessageStopsBeforeTheRowCounterAndAProblemGoesWithItsCase()
{
    QVERIFY(window_->openCase(firstCase_));
    auto* bar = qobject_cast<ElidingStatusBar*>(window_->statusBar());
    QVERIFY(bar);
    auto* rows = window_->findChild<QLabel*>(QStringLiteral("rowCount"));
    QVERIFY(rows && rows->isVisible() && !rows->text().isEmpty());
    const QString longMessage = QStringLiteral("tape 1: ") + QStringLiteral("a very long reason why ").repeated(20) + QStringLiteral("THE END");
    bar->showMessage(longMessage, 0);
    QCOMPARE(bar->currentMessage(), longMessage);
    QCOMPARE(bar->toolTip(), longMessage);
    const QString shown = bar->shownMessage();
    QVERIFY2(shown.endsWith(QChar(0x2026)) && !shown.contains(QStringLiteral("THE END")), qPrintable(shown));
    const QRect area = bar->messageArea();
    QVERIFY2(area.right() < rows->x(), qPrintable(QStringLiteral("%1 >= %2").arg(area.right()).arg(rows->x())));
    QVERIFY(bar->fontMetrics().horizontalAdvance(shown) <= area.width());

    // A moved tape is a problem of its case: said when the case opens, gone with the case.
    test::TempDir moved;
    const QString casePath = QString::fromStdString(moved.file("moved.zkaudit"));
    const std::string tape = moved.file("demo.zkdv");
    QVERIFY(QFile::copy(QString::fromStdString(dir_.file("demo.zkdv")), QString::fromStdString(tape)));
    {
        CaseStore store(casePath.toStdString(), CaseStore::Access::ReadWrite);
        store.ingestTape(tape);
    }
    QVERIFY(QFile::rename(QString::fromStdString(tape), QString::fromStdString(moved.file("elsewhere.zkdv"))));
    QVERIFY(window_->openCase(casePath));
    QVERIFY2(bar->currentMessage().contains(QStringLiteral("moved")), qPrintable(bar->currentMessage()));
    QVERIFY(window_->openCase(QString()));
    QVERIFY2(!bar->currentMessage().contains(QStringLiteral("moved")), qPrintable(bar->currentMessage()));
}

void TestWorkstationShell::displayFiltersApplyAndABadOneSaysWhereWithoutLosingTheRows()
{
    QVERIFY(window_->openCase(firstCase_));
    auto* filter = window_->findChild<QLineEdit*>(QStringLiteral("textFilter"));
    QTRY_COMPARE(window_->transactionModel()->rowCount(), 30);
    filter->setText(QStringLiteral("index < 5 || index >= 28"));
    QTRY_COMPARE(window_->transactionModel()->rowCount(), 7);
    QVERIFY(!filter->property("filterError").toBool());
    filter->setText(QStringLiteral("index <"));
    QTRY_VERIFY(filter->property("filterError").toBool());
    QVERIFY2(filter->toolTip().startsWith(QStringLiteral("display filter, at character 8: ")), qPrintable(filter->toolTip()));
    QCOMPARE(window_->messageLog()->messages().last(), filter->toolTip());
    QCOMPARE(window_->transactionModel()->rowCount(), 7);  // the last filter that compiled still applies
    filter->clear();
    QTRY_COMPARE(window_->transactionModel()->rowCount(), 30);
    QVERIFY(!filter->property("filterError").toBool());
}

void TestWorkstationShell::recordBytesFollowTheSelectionAndTheFinding()
{
    QVERIFY(window_->openCase(firstCase_));
    RecordBytesPane* pane = window_->recordBytesPane();
    QVERIFY(pane);
    QVERIFY(!window_->recordBytesInView());  // tabbed behind the messages
    QTableView* table = window_->transactionView();
    QTRY_VERIFY(table->model()->rowCount() >= 10);
    std::uint64_t frameOffset = 0;
    {
        CaseStore store(firstCase_.toStdString(), CaseStore::Access::ReadOnly);
        Statement offset = store.database().prepare("SELECT record_offset FROM transactions WHERE idx = 4");
        QVERIFY(offset.step());
        frameOffset = static_cast<std::uint64_t>(offset.int64(0));
    }
    // Selected while the pane is hidden: nothing is read until it comes into view.
    const int row = window_->transactionModel()->rowOfTransaction(4);
    table->selectRow(row);
    QTest::qWait(300);
    QVERIFY(!pane->record() && !pane->isLoading());
    QAction* toggle = actionWithShortcut(*window_, QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_B));
    QVERIFY(toggle);
    toggle->trigger();
    QTRY_VERIFY(window_->recordBytesInView());
    QTRY_VERIFY(pane->record() != nullptr);
    QVERIFY2(pane->message().contains(QStringLiteral("transaction 4")), qPrintable(pane->message()));
    QCOMPARE(pane->record()->dissection.frameOffset, frameOffset);

    // A corrupt tape's finding: the banner hands its record at fault, with the byte marked.
    std::vector<std::uint8_t> bytes = test::readAll(dir_.file("demo.zkdv"));
    const std::size_t flipped = bytes.size() / 2;
    bytes[flipped] ^= 0x10;
    const std::string corrupt = dir_.file("corrupt-shell.zkdv");
    test::writeAll(corrupt, bytes);
    QSignalSpy finished(window_.get(), &MainWindow::jobFinished);
    window_->openPaths({QString::fromStdString(corrupt)});
    QVERIFY(finished.wait(60000));
    QPushButton* showBytes = nullptr;
    for (QPushButton* button : window_->findingBanner()->findChildren<QPushButton*>())
        if (button->text() == QStringLiteral("Show Record Bytes"))
            showBytes = button;
    QVERIFY(showBytes && showBytes->isVisible());
    showBytes->click();
    QTRY_VERIFY(pane->record() != nullptr && pane->findingByte().has_value());
    QVERIFY(pane->isVisible());
    QVERIFY(*pane->findingByte() >= pane->record()->dissection.frameOffset);
    QVERIFY(pane->isByteVisible(*pane->findingByte()));
}

QTEST_MAIN(TestWorkstationShell)
#include "test_workstation_shell.moc"
