#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QComboBox>
#include <QDialog>
#include <QCoreApplication>
#include <QDir>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSignalBlocker>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTimer>
#include <QToolBar>

#include <algorithm>
#include <atomic>
#include <memory>

#include "dialogs/cluster_job_dialog.h"
#include "dialogs/dataset_check_dialog.h"
#include "dialogs/help_dialog.h"
#include "dialogs/sample_dialog.h"
#include "dialogs/top_q_dialog.h"
#include "dialogs/weight_match_dialog.h"
#include "jobs/background_job.h"
#include "jobs/case_jobs.h"
#include "jobs/job_runner.h"
#include "jobs/report_export_job.h"
#include "jobs/replay_worker_probe.h"
#include "models/case_queries.h"
#include "models/transaction_table_model.h"
#include "plots/chart_panel.h"
#include "report/report_document.h"
#include "settings/settings.h"
#include "ui_info.h"
#include "widgets/case_overview.h"
#include "widgets/display_filter_bar.h"
#include "widgets/eliding_status_bar.h"
#include "widgets/finding_banner.h"
#include "widgets/job_progress_frame.h"
#include "widgets/message_log.h"
#include "widgets/missing_tape_bar.h"
#include "widgets/record_bytes_pane.h"
#include "widgets/run_list.h"
#include "widgets/start_page.h"
#include "widgets/tape_header.h"
#include "widgets/transaction_detail_pane.h"
#include "widgets/transaction_table_view.h"
#include "widgets/wheel_guard.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/workflow/file_ingest.h"
#include "zkdv/workflow/handed_files.h"
#include "zkdv/workflow/report_export.h"
#include "zkdv/store/transaction_table.h"

namespace zkdv::ui {

namespace {

QString fileName(const QString& path) { return QFileInfo(path).fileName(); }

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent)
{
    setWindowTitle(tr("ZKDV Audit Workstation"));
    setAcceptDrops(true);
    workerProbe_ = new ReplayWorkerProbe(this);
    jobs_ = new JobRunner(this);
    createCentralWidgets();
    createActions();
    progress_ = new JobProgressFrame(this);
    connect(jobs_, &JobRunner::started, this, [this](BackgroundJob* job) {
        progress_->follow(job);
        updateActions();
    });
    connect(jobs_, &JobRunner::refused, this, [this](const QString& why) { showMessage(why); });
    connect(jobs_, &JobRunner::finished, this, &MainWindow::jobDone);
    auto* status = new ElidingStatusBar(this);
    setStatusBar(status);
    status->addPermanent(rowCount_);
    status->addPermanent(progress_);
    resultsTimer_ = new QTimer(this);
    resultsTimer_->setSingleShot(true);
    resultsTimer_->setInterval(400);
    connect(resultsTimer_, &QTimer::timeout, this, &MainWindow::refreshResults);
    if (!restoreGeometry(Settings::windowGeometry()))
        resize(1400, 900);
    if (!restoreState(Settings::windowState()))
    {
        resizeDocks({messageLog_}, {110}, Qt::Vertical);  // a few lines: the workspace keeps the room
        QTimer::singleShot(0, messageLog_, &QWidget::raise);  // the messages in front of the bytes, once tabbed
        // Once laid out (a dock is sized only then): the details take a third, the table keeps the rest.
        QTimer::singleShot(0, this, [this] { resizeDocks({details_}, {std::max(320, width() / 3)}, Qt::Horizontal); });
    }
    updateActions();
    showMessage(tr("Open a case (Ctrl+O) or drop tapes (*.zkdv) and sealed programs here."), 0);
}

MainWindow::~MainWindow() = default;

void MainWindow::createCentralWidgets()
{
    overview_ = new CaseOverview(this);
    runs_ = new RunList(this);
    model_ = new TransactionTableModel(this);
    model_->setRun(TransactionTable::kEveryRun);
    model_->setBackgroundFetch(true);
    table_ = new TransactionTableView(model_, this);
    connect(table_, &TransactionTableView::exportRequested, this, [this] {
        const QFileInfo caseFile(casePath_);
        const QString path = QFileDialog::getSaveFileName(this, tr("Export Table as CSV"),
                                                          caseFile.absoluteDir().filePath(caseFile.completeBaseName() + QStringLiteral("-table.csv")),
                                                          tr("CSV (*.csv)"));
        if (!path.isEmpty())
            exportTableCsv(path);
    });
    charts_ = new ChartPanel(this);

    // The filter row is its own widget (completion, live compile state); quickFilter_ and
    // textFilter_ are its boxes, for the shortcuts and the row count.
    filterBar_ = new DisplayFilterBar(this);
    quickFilter_ = filterBar_->quickFilterBox();
    textFilter_ = filterBar_->filterEdit();
    connect(filterBar_, &DisplayFilterBar::filterChanged, this, [this](const QString& text) { model_->setTextFilter(text); });
    connect(filterBar_, &DisplayFilterBar::problemFound, this, [this](const QString& problem) { showMessage(problem); });
    connect(filterBar_, &DisplayFilterBar::quickFilterChanged, this, [this](int index) {
        model_->setQuickFilter(static_cast<TransactionTableModel::QuickFilter>(index), Settings::topQ());
    });
    WheelGuard::guardChildren(this);  // the toolbar's device box is guarded where it is made

    auto* tablePane = new QWidget(this);
    auto* tableLayout = new QVBoxLayout(tablePane);
    tableLayout->setContentsMargins(0, 0, 0, 0);
    tapeHeader_ = new TapeHeader(this);
    connect(tapeHeader_, &TapeHeader::problem, this, [this](const QString& message) { showMessage(message); });
    tableLayout->addWidget(tapeHeader_);
    tableLayout->addWidget(filterBar_);
    tableLayout->addWidget(table_, 1);

    auto* casePanel = new QSplitter(Qt::Vertical, this);
    casePanel->addWidget(overview_);
    casePanel->addWidget(runs_);
    casePanel->setStretchFactor(0, 3);
    casePanel->setStretchFactor(1, 2);
    // Room for the header and three runs, whatever the window's size.
    runs_->setMinimumHeight(runs_->fontMetrics().height() * 7);
    casePanel->setSizes({300, 200});
    auto* top = new QSplitter(Qt::Horizontal, this);
    top->addWidget(casePanel);
    top->addWidget(tablePane);
    top->setStretchFactor(0, 1);
    top->setStretchFactor(1, 3);
    auto* main = new QSplitter(Qt::Vertical, this);
    main->addWidget(top);
    main->addWidget(charts_);
    main->setStretchFactor(0, 1);
    main->setStretchFactor(1, 1);
    main->setSizes({500, 420});
    workspace_ = main;
    start_ = new StartPage(this);
    pages_ = new QStackedWidget(this);
    pages_->addWidget(start_);
    pages_->addWidget(workspace_);
    pages_->setCurrentWidget(start_);
    banner_ = new FindingBanner(this);
    auto* central = new QWidget(this);
    auto* centralLayout = new QVBoxLayout(central);
    centralLayout->setContentsMargins(0, 0, 0, 0);
    centralLayout->addWidget(banner_);
    missingBar_ = new MissingTapeBar(this);
    centralLayout->addWidget(missingBar_);
    connect(missingBar_, &MissingTapeBar::locateRequested, this, &MainWindow::locateTapeDialog);
    centralLayout->addWidget(pages_, 1);
    setCentralWidget(central);
    connect(banner_, &FindingBanner::ingestReadablePartRequested, this, &MainWindow::ingestReadablePart);
    connect(banner_, &FindingBanner::exportReportRequested, this, &MainWindow::exportFindingReportDialog);
    connect(start_, &StartPage::openRequested, this, [this](const QString& path) { openPaths({path}); });
    connect(start_, &StartPage::newCaseRequested, this, &MainWindow::newCase);
    connect(start_, &StartPage::openCaseRequested, this, &MainWindow::openCaseDialog);

    messageLog_ = new MessageLog(this);
    addDockWidget(Qt::BottomDockWidgetArea, messageLog_);
    details_ = new TransactionDetailPane(this);
    addDockWidget(Qt::RightDockWidgetArea, details_);
    // The selected record's bytes, tabbed with the messages; read only while it is in view.
    recordBytes_ = new RecordBytesPane(this);
    addDockWidget(Qt::BottomDockWidgetArea, recordBytes_);
    tabifyDockWidget(messageLog_, recordBytes_);
    connect(details_, &TransactionDetailPane::recordShown, recordBytes_, &RecordBytesPane::follow);
    connect(banner_, &FindingBanner::recordBytesRequested, this,
            [this](const QString& tapeFile, quint64 frameOffset, quint64 faultByte, const QString& caption) {
                recordBytes_->show();
                recordBytes_->raise();
                recordBytes_->showRecord(tapeFile, frameOffset, faultByte, caption);
            });
    connect(details_, &TransactionDetailPane::problem, this, [this](const QString& message) { showMessage(message); });
    // A stored note shows in the table's Note column (and in what a flag filter selects).
    connect(details_, &TransactionDetailPane::noteSaved, this, [this] { model_->refresh(); });

    // Copy and Copy Value are the Edit menu's (one action per key, createActions); these are
    // the same for the table's context menu.
    auto* copyRows = new QAction(tr("&Copy Rows"), table_);
    connect(copyRows, &QAction::triggered, this, [this] { copySelectedRows(); });
    auto* copyValue = new QAction(tr("Copy &Value"), table_);
    connect(copyValue, &QAction::triggered, this, [this] { QApplication::clipboard()->setText(table_->currentValueText()); });
    table_->insertActions(table_->actions().value(0), {copyRows, copyValue});
    // Tab walks the panes in reading order (filters, table, charts, case tree).
    setTabOrder(quickFilter_, textFilter_);
    setTabOrder(textFilter_, table_);
    setTabOrder(table_, charts_);
    setTabOrder(charts_, overview_);
    setTabOrder(overview_, runs_);
    setTabOrder(runs_, details_);

    connect(overview_, &CaseOverview::tapeChosen, this, [this](qint64 tapeId) {
        // The note being typed is settled before its tape goes; Cancel takes the choice back.
        if (tapeId != tape_ && !details_->settlePendingNote()) {
            QTimer::singleShot(0, this, [this] { overview_->chooseTape(tape_); });
            return;
        }
        setTape(tapeId);
    });
    connect(runs_, &RunList::runChosen, this, [this](qint64 run) {
        model_->setRun(run);
        charts_->setRun(run);
        updateRowCount();
        showMessage(run == TransactionTable::kEveryRun ? tr("Showing every replay run: per transaction, the newest result.")
                                                      : tr("Showing replay run %1 only.").arg(run));
    });
    connect(runs_, &RunList::problem, this, [this](const QString& message) { showMessage(message); });
    connect(overview_, &CaseOverview::problem, this, [this](const QString& message) { showMessage(message); });
    connect(model_, &TransactionTableModel::problem, this, [this](const QString& message) { showMessage(message); });
    connect(charts_, &ChartPanel::problem, this, [this](const QString& message) { showMessage(message); });
    connect(charts_, &ChartPanel::transactionClicked, this, &MainWindow::selectTransaction);
    // The selection, not the focus, drives the charts: Ctrl+click moves the focus without
    // selecting, and a row can be selected away from the focus.
    rowCount_ = new QLabel(this);
    rowCount_->setObjectName(QStringLiteral("rowCount"));
    connect(model_, &QAbstractItemModel::modelReset, this, &MainWindow::updateRowCount);
    connect(model_, &QAbstractItemModel::layoutChanged, this, &MainWindow::updateRowCount);
    connect(model_, &QAbstractItemModel::rowsInserted, this, &MainWindow::updateRowCount);
    connect(model_, &QAbstractItemModel::rowsRemoved, this, &MainWindow::updateRowCount);
    connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &MainWindow::tableSelectionChanged);
    connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &MainWindow::tableSelectionChanged);
}

void MainWindow::createActions()
{
    auto action = [this](QMenu* menu, const QString& text, const QKeySequence& shortcut, auto slot, const QString& tip = QString()) {
        QAction* a = menu->addAction(text);
        a->setShortcut(shortcut);
        a->setStatusTip(tip);
        a->setToolTip(tip.isEmpty() ? text : tip);
        connect(a, &QAction::triggered, this, slot);
        addAction(a);  // shortcuts work with the menu bar hidden
        return a;
    };

    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* newCase = action(file, tr("&New Case…"), QKeySequence(Qt::CTRL | Qt::Key_N), &MainWindow::newCase, tr("Create an empty audit case"));
    QAction* open = action(file, tr("&Open Case…"), QKeySequence(Qt::CTRL | Qt::Key_O), &MainWindow::openCaseDialog, tr("Open an audit case (*.zkaudit)"));
    QAction* add = action(file, tr("&Add Tapes or Programs…"), QKeySequence(Qt::CTRL | Qt::Key_I), &MainWindow::addFilesDialog,
                          tr("Ingest tapes (*.zkdv) and sealed program files into the case"));
    QAction* exportAction = action(file, tr("&Export Report…"), QKeySequence(Qt::CTRL | Qt::Key_E), &MainWindow::exportReportDialog,
                                   tr("Write the audit report of the chosen replay run (the newest with All runs) as PDF, HTML, JSON or CSV"));
    QAction* verdictAction = action(file, tr("Export Signed &Verdict…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_V), &MainWindow::exportSignedVerdictDialog,
                                    tr("Write the chosen run's verdict signed with your key, for anyone to check with zkdv-audit verify-attestation"));
    ingestPartAction_ = action(file, tr("Ingest Readable &Part of Incomplete Tape"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_I),
                               [this] { ingestReadablePart(banner_->incompleteTapes()); },
                               tr("Ingest what a truncated or unsealed tape holds up to the cut"));
    exportFindingAction_ = action(file, tr("Export &Finding Report…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E),
                                  &MainWindow::exportFindingReportDialog, tr("Write the report of a tape that could not be ingested"));
    locateAction_ = action(file, tr("&Locate Moved Tape…"), QKeySequence(Qt::CTRL | Qt::Key_L), [this] {
        if (!missingBar_->missing().isEmpty())
            locateTapeDialog(missingBar_->isMissing(tape_) ? tape_ : missingBar_->missing().front().tapeId);
    }, tr("Point the case at a tape file that moved since it was ingested"));
    QAction* mergeShards = action(file, tr("&Merge Shard Results…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_G),
                                  &MainWindow::mergeShardResultsDialog,
                                  tr("Join the shard cases of a replay split over a cluster (zkdv-audit replay --shard) into this case as one run"));
    recentMenu_ = file->addMenu(tr("Open &Recent"));
    file->addSeparator();
    QAction* close = action(file, tr("&Close Case"), QKeySequence(Qt::CTRL | Qt::Key_W), [this] { openCase(QString()); });
    action(file, tr("&Quit"), QKeySequence(Qt::CTRL | Qt::Key_Q), &QWidget::close);
    jobActions_ << newCase << open << add << exportAction << verdictAction << mergeShards << close;
    caseActions_ << add << exportAction << verdictAction << mergeShards << close;
    tapeActions_ << exportAction << verdictAction;

    // One Copy for every pane: it copies from the pane with the focus (text fields keep
    // their own Ctrl+C, which they take before any window shortcut).
    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    action(edit, tr("&Copy"), QKeySequence(QKeySequence::Copy), [this] { copyFromFocus(false); },
           tr("Copy the selected rows of the table, the case tree or the messages, with a header line"));
    action(edit, tr("Copy &Value"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C), [this] { copyFromFocus(true); },
           tr("Copy the value of the current cell of the table or the case tree, without the words around it"));

    QMenu* replay = menuBar()->addMenu(tr("&Replay"));
    QAction* selected = action(replay, tr("Replay &Selected"), QKeySequence(Qt::CTRL | Qt::Key_R), &MainWindow::replaySelected,
                               tr("Replay the selected transactions from their nearest snapshots"));
    QAction* sample = action(replay, tr("Replay Random S&ample…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R), &MainWindow::replaySample,
                             tr("Replay n or p% of the transactions chosen at random with a seed"));
    QAction* topq = action(replay, tr("Replay &Top-q…"), QKeySequence(Qt::CTRL | Qt::Key_T), &MainWindow::replayTopQ,
                           tr("Replay each parameter's q largest recorded updates"));
    QAction* clusterJob = action(replay, tr("Export C&luster Job…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_J),
                                 &MainWindow::exportClusterJobDialog,
                                 tr("Write a Slurm array script or Kubernetes Indexed Job that replays a selection as shards on a cluster "
                                    "and merges them into this case"));
    replay->addSeparator();
    cancelAction_ = action(replay, tr("&Cancel"), QKeySequence(Qt::Key_Escape), [this] { jobs_->cancel(); }, tr("Stop the running job; what it finished is kept"));
    jobActions_ << selected << sample << topq << clusterJob;
    tapeActions_ << selected << sample << topq << clusterJob;

    QMenu* view = menuBar()->addMenu(tr("&View"));
    const QStringList filters = {tr("All Transactions"), tr("Diverged"), tr("Not Replayed"), tr("With Sampled Checks"), tr("Top-q Updates")};
    for (int i = 0; i < filters.size(); ++i)
        action(view, filters[i], QKeySequence(Qt::ALT | static_cast<Qt::Key>(Qt::Key_0 + i)), [this, i] { quickFilter_->setCurrentIndex(i); });
    view->addSeparator();
    action(view, tr("&Filter…"), QKeySequence(Qt::CTRL | Qt::Key_F), [this] {
        textFilter_->setFocus();
        textFilter_->selectAll();
    });
    action(view, tr("&Refresh"), QKeySequence(Qt::Key_F5), &MainWindow::refreshResults);
    view->addSeparator();
    for (int i = 0; i < charts_->count(); ++i)
        action(view, tr("%1 Chart").arg(charts_->tabText(i).replace(QLatin1String("&&"), QLatin1String("and"))),
               QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)), [this, i] {
                   charts_->setCurrentIndex(i);
                   charts_->currentWidget()->setFocus();
               });
    view->addSeparator();
    QAction* messages = messageLog_->toggleViewAction();
    messages->setText(tr("&Messages"));
    messages->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_M));
    view->addAction(messages);
    QAction* details = details_->toggleViewAction();
    details->setText(tr("Transaction &Details"));
    details->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
    view->addAction(details);
    // Brings the pane to the front even when its tab is behind the messages (a toggle would
    // close it then), and closes it when it is in front.
    action(view, tr("Record &Bytes"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_B), [this] { recordBytes_->toggleInView(); }, tr("The selected transaction's record on the tape, field by field beside its bytes"));

    // The tape's links to the world: its data, its start and the model shipped from it.
    QMenu* tools = menuBar()->addMenu(tr("&Tools"));
    QAction* checkDataset = action(tools, tr("Check &Dataset Commitment…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_K),
                                   &MainWindow::checkDatasetDialog,
                                   tr("Check a dataset commitment, and optionally its data, for the current tape; the case keeps the outcome"));
    QAction* matchWeights = action(tools, tr("&Match Weights…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_W), &MainWindow::matchWeightsDialog,
                                   tr("Compare a safetensors model with the current tape's snapshot 0 or final state; the case keeps the outcome"));
    jobActions_ << checkDataset << matchWeights;
    caseActions_ << checkDataset << matchWeights;
    tapeActions_ << checkDataset << matchWeights;

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    action(help, tr("&Workstation Help"), QKeySequence(QKeySequence::HelpContents), &MainWindow::showHelp);
    action(help, tr("&About ZKDV Workstation"), QKeySequence(Qt::SHIFT | Qt::Key_F1), &MainWindow::showAbout);

    QToolBar* toolbar = addToolBar(tr("Main"));
    toolbar->setObjectName(QStringLiteral("mainToolbar"));
    toolbar->addAction(open);
    toolbar->addAction(add);
    toolbar->addSeparator();
    toolbar->addAction(selected);
    toolbar->addAction(sample);
    toolbar->addAction(topq);
    toolbar->addAction(cancelAction_);
    toolbar->addSeparator();
    toolbar->addWidget(new QLabel(tr(" Device: "), this));
    device_ = new QComboBox(this);
    device_->addItem(QStringLiteral("cpu"));
    device_->setToolTip(tr("Where replays run: the CPU or a CUDA device the replay worker's libtorch sees"));
    // The CUDA devices come from a replay worker's hello, off the GUI thread: the workstation
    // loads no libtorch. Until then only the CPU is offered, and the saved choice is kept.
    connect(workerProbe_, &ReplayWorkerProbe::finished, this, [this] {
        const QString saved = Settings::replayDevice();
        const QSignalBlocker quiet(device_);
        for (const QString& device : workerProbe_->devices())
            if (device_->findText(device) < 0)
                device_->addItem(device);
        if (const int index = device_->findText(saved); index >= 0)
            device_->setCurrentIndex(index);
        details_->setReplayDevice(device_->currentText());
        if (!workerProbe_->problem().isEmpty())
            showMessage(tr("The replay worker did not start, so nothing can be replayed: %1").arg(workerProbe_->problem()), 0);
    });
    workerProbe_->start();
    connect(device_, &QComboBox::currentTextChanged, this, [](const QString& device) { Settings::setReplayDevice(device); });
    details_->setReplayDevice(device_->currentText());
    connect(device_, &QComboBox::currentTextChanged, details_, &TransactionDetailPane::setReplayDevice);
    toolbar->addWidget(device_);
    WheelGuard::guard(device_);
    updateRecentFilesMenu();
}

void MainWindow::updateRecentFilesMenu()
{
    start_->refresh();
    recentMenu_->clear();
    const QStringList files = Settings::recentFiles();
    for (int i = 0; i < files.size(); ++i) {
        QAction* a = recentMenu_->addAction(QStringLiteral("&%1 %2").arg(i + 1).arg(fileName(files[i])));
        a->setToolTip(files[i]);
        a->setShortcut(QKeySequence(Qt::CTRL | Qt::ALT | static_cast<Qt::Key>(Qt::Key_1 + i)));
        const QString path = files[i];
        connect(a, &QAction::triggered, this, [this, path] { openPaths({path}); });
    }
    recentMenu_->addSeparator();
    QAction* clear = recentMenu_->addAction(tr("Clear Recent Files"));
    clear->setEnabled(!files.isEmpty());
    connect(clear, &QAction::triggered, this, [this] {
        Settings::clearRecentFiles();
        updateRecentFilesMenu();
    });
}

void MainWindow::updateActions()
{
    const bool busy = jobs_->isBusy();
    for (QAction* a : jobActions_)
        a->setEnabled(!busy && (!caseActions_.contains(a) || !casePath_.isEmpty()) && (!tapeActions_.contains(a) || tape_ != 0));
    cancelAction_->setEnabled(busy);
    ingestPartAction_->setEnabled(!busy && !banner_->incompleteTapes().isEmpty());
    exportFindingAction_->setEnabled(!busy && banner_->reportable() != nullptr);
    locateAction_->setEnabled(!busy && !missingBar_->missing().isEmpty());
    if (busy) {
        cancelAction_->setText(QLatin1Char('&') + jobs_->current()->interruptLabel());
        cancelAction_->setToolTip(jobs_->current()->interruptToolTip());
    }
}

bool MainWindow::recordBytesInView() const { return recordBytes_->isInView(); }

QString MainWindow::replayDevice() const { return device_->currentText(); }

BackgroundJob* MainWindow::currentJob() const { return jobs_->current(); }

void MainWindow::clearStickyMessage()
{
    if (!stickyMessage_.isEmpty() && statusBar()->currentMessage() == stickyMessage_)
        statusBar()->clearMessage();
    stickyMessage_.clear();
}

void MainWindow::showMessage(const QString& message, int timeoutMs)
{
    statusBar()->showMessage(message, timeoutMs);
    messageLog_->append(message);
    // A message that stays (a problem) is about the case in view: it goes with that case.
    stickyMessage_ = timeoutMs == 0 ? message : QString();
}

bool MainWindow::openCase(const QString& casePath)
{
    if (jobs_->isBusy()) {
        showMessage(jobs_->busyText());
        return false;
    }
    if (!details_->settlePendingNote())
        return false;  // the auditor stays with the unsaved note
    if (!casePath.isEmpty()) {
        try {
            prepareCase(casePath);
        } catch (const std::exception& error) {
            showMessage(tr("%1: %2").arg(fileName(casePath), QString::fromStdString(error.what())));
            return false;
        }
        Settings::addRecentFile(casePath);
        updateRecentFilesMenu();
    }
    casePath_ = casePath;
    clearStickyMessage();
    pages_->setCurrentWidget(casePath_.isEmpty() ? static_cast<QWidget*>(start_) : workspace_);
    overview_->showCase(casePath_);
    setTape(overview_->currentTape());
    checkTapeFiles();
    setWindowTitle(casePath_.isEmpty() ? tr("ZKDV Audit Workstation") : tr("%1 — ZKDV Audit Workstation").arg(fileName(casePath_)));
    updateActions();
    Q_EMIT caseChanged(casePath_);
    if (!casePath_.isEmpty()) {
        const QString opened = overview_->tapeCount() ? tr("Opened %1: %2 tape(s).").arg(casePath_).arg(overview_->tapeCount())
                                                      : tr("Opened %1. Drop tapes here to ingest them.").arg(casePath_);
        // A problem of the case just found (moved tapes) stays in view; the log has both.
        if (stickyMessage_.isEmpty())
            showMessage(opened);
        else
            messageLog_->append(opened);
    }
    return true;
}

void MainWindow::setTape(qint64 tapeId)
{
    tape_ = tapeId;
    transactionCount_ = 0;
    if (!casePath_.isEmpty() && tapeId != 0) {
        try {
            transactionCount_ = tapeTransactionCount(casePath_, tapeId);
        } catch (const std::exception& error) {
            showMessage(QString::fromStdString(error.what()));
        }
    }
    tapeHeader_->showTape(tapeId ? casePath_ : QString(), tapeId);
    // Another tape starts on all of its runs.
    runs_->showRuns(tapeId ? casePath_ : QString(), tapeId);
    model_->setRun(runs_->chosenRun());
    model_->setCase(tapeId ? casePath_ : QString(), tapeId);
    charts_->setCase(tapeId ? casePath_ : QString(), tapeId);
    charts_->setRun(runs_->chosenRun());
    details_->setCase(tapeId ? casePath_ : QString(), tapeId);
    recordBytes_->clear(tapeId ? tr("Select a transaction to see its record's bytes.") : QString());
    updateRowCount();
    updateActions();
}

void MainWindow::openPaths(const QStringList& paths)
{
    std::vector<std::string> names;
    for (const QString& path : paths)
        names.push_back(path.toStdString());
    const HandedFiles handed = sortHandedFiles(names);
    auto qt = [](const std::vector<std::string>& list) {
        QStringList out;
        for (const std::string& entry : list)
            out << QString::fromStdString(entry);
        return out;
    };
    QStringList tapes = qt(handed.tapes), others = qt(handed.others), refused = qt(handed.unreadable);
    for (std::size_t i = 1; i < handed.cases.size(); ++i)
        refused << tr("%1: one case at a time").arg(fileName(QString::fromStdString(handed.cases[i])));
    if (!handed.cases.empty() && !openCase(QString::fromStdString(handed.cases.front())))
        return;
    QString createdCase;
    if (casePath_.isEmpty() && !tapes.isEmpty() && !openCaseBeside(tapes.front(), &createdCase))
        return;
    if (casePath_.isEmpty() && !others.isEmpty()) {
        for (const QString& path : others)
            refused << tr("%1: not a ZKDV tape or case (open a case first to add sealed program files)").arg(fileName(path));
        others.clear();
    }
    if (!refused.isEmpty())
        showMessage(refused.join(QStringLiteral("; ")), 15000);
    for (const QString& tape : tapes)
        Settings::addRecentFile(tape);
    if (!tapes.isEmpty() || !others.isEmpty())
        ingest(tapes + others, false, createdCase);
}

bool MainWindow::openCaseBeside(const QString& tape, QString* created)
{
    const QFileInfo file(tape);
    const QString path = file.absoluteDir().filePath(file.completeBaseName() + QStringLiteral(".zkaudit"));
    const bool existed = QFileInfo::exists(path);
    if (!openCase(path))
        return false;
    if (!existed)
        *created = path;
    return true;
}

void MainWindow::ingestReadablePart(const QStringList& tapes)
{
    if (tapes.isEmpty())
        return;
    QString createdCase;
    if (casePath_.isEmpty() && !openCaseBeside(tapes.front(), &createdCase))
        return;
    banner_->dismiss();
    ingest(tapes, true, createdCase);
}

void MainWindow::checkTapeFiles()
{
    QList<MovedTape> missing;
    if (!casePath_.isEmpty()) {
        try {
            missing = movedTapes(casePath_);
        } catch (const std::exception& error) {
            showMessage(QString::fromStdString(error.what()));
        }
    }
    const bool changed = missing.size() != missingBar_->missing().size();
    if (missing.isEmpty() && !missingBar_->missing().isEmpty())
        clearStickyMessage();  // the moved tapes are found: what said so goes too
    missingBar_->showMissing(missing);
    if (changed && !missing.isEmpty())
        showMessage(tr("%n tape file(s) of this case moved or changed since ingest: locate them to replay (Ctrl+L).", nullptr,
                       static_cast<int>(missing.size())),
                    0);
    updateActions();
}

void MainWindow::locateTapeDialog(qint64 tapeId)
{
    QString expected;
    for (const MovedTape& entry : missingBar_->missing())
        if (entry.tapeId == tapeId)
            expected = entry.path;
    const QString path = QFileDialog::getOpenFileName(this, tr("Locate Tape %1 (%2)").arg(tapeId).arg(fileName(expected)),
                                                      QFileInfo(expected).absolutePath(), tr("Tapes (*.zkdv);;All files (*)"));
    if (!path.isEmpty())
        locateTape(tapeId, path);
}

bool MainWindow::locateTape(qint64 tapeId, const QString& path)
{
    if (casePath_.isEmpty())
        return false;
    return jobs_->start(relocateTapeJob(casePath_, tapeId, path), [this](bool&, QString&) { checkTapeFiles(); });
}

void MainWindow::discardEmptyCase(const QString& casePath)
{
    if (!caseHoldsNoTape(casePath))
        return;
    if (casePath_ == casePath)
        openCase(QString());
    removeCaseFiles(casePath);
    Settings::removeRecentFile(casePath);
    updateRecentFilesMenu();
    showMessage(tr("Removed %1 again: nothing could be ingested into it.").arg(fileName(casePath)));
}

bool MainWindow::exportTableCsv(const QString& path)
{
    if (casePath_.isEmpty() || tape_ == 0) {
        showMessage(tr("Nothing to export: open a case with a tape first."));
        return false;
    }
    return jobs_->start(tableCsvJob(casePath_, tape_, model_->tableView(), path), {}, true);
}

bool MainWindow::exportFindingReport(const QString& path)
{
    const TapeFinding* finding = banner_->reportable();
    if (!finding) {
        showMessage(tr("No finding to report: drop a tape first."));
        return false;
    }
    const std::optional<ReportFormat> format = reportFormatOfPath(path.toStdString());
    if (!format) {
        showMessage(tr("%1: a report is written as .pdf, .html, .json or .csv").arg(fileName(path)));
        return false;
    }
    const ReportData report = buildTapeFindingReport(*finding->summary);
    std::string error;
    bool ok = true;
    try {
        writeReport(report, *format, path.toStdString(), &documents_);
    } catch (const std::exception& failure) {
        ok = false;
        error = failure.what();
    }
    showMessage(ok ? tr("Finding report written to %1: %2").arg(QDir::toNativeSeparators(path), QString::fromStdString(report.headline))
                   : tr("Report not written: %1").arg(QString::fromStdString(error)),
                ok ? 10000 : 0);
    return ok;
}

void MainWindow::exportFindingReportDialog()
{
    const TapeFinding* finding = banner_->reportable();
    if (!finding)
        return;
    const QFileInfo tape(finding->path);
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Finding Report"),
                                                      tape.absoluteDir().filePath(tape.completeBaseName() + QStringLiteral("-finding.pdf")),
                                                      tr("PDF (*.pdf);;HTML (*.html);;JSON (*.json);;CSV (*.csv)"));
    if (!path.isEmpty())
        exportFindingReport(path);
}

void MainWindow::ingest(const QStringList& files, bool allowIncomplete, const QString& createdCase)
{
    auto results = std::make_shared<std::vector<IngestedFile>>();
    jobs_->start(ingestJob(casePath_, files, allowIncomplete, results), [this, results, createdCase](bool&, QString&) {
        // The whole finding stays in view, and a case made for a tape that was refused does
        // not linger empty on disk or in Open Recent.
        QList<TapeFinding> findings;
        for (const IngestedFile& file : *results)
            if (!file.ok() && file.isTape())
                findings.append({QString::fromStdString(file.path), QString::fromStdString(file.describe()), file.summary});
        if (!findings.isEmpty())
            banner_->showFindings(findings);
        if (!createdCase.isEmpty())
            discardEmptyCase(createdCase);
    });
}

void MainWindow::jobDone(bool ok, const QString& message, bool readsOnly)
{
    showMessage(message, ok ? 10000 : 0);
    if (!readsOnly) {
        overview_->showCase(casePath_);
        if (overview_->currentTape() != tape_)
            setTape(overview_->currentTape());
        else
            refreshResults();
        updateRecentFilesMenu();
    }
    updateActions();
    Q_EMIT jobFinished(ok, message);
}

bool MainWindow::startReplay(const QString& spec, std::optional<quint64> seed, SeedSource source)
{
    if (casePath_.isEmpty() || tape_ == 0) {
        showMessage(tr("Nothing to replay: open a case with a tape first."));
        return false;
    }
    ReplayRequest request;
    try {
        request.selection = SelectionSpec::parse(spec.toStdString());
    } catch (const std::exception& error) {
        showMessage(QString::fromStdString(error.what()));
        return false;
    }
    // A tape file that moved is located first: a replay of it would only fail, and a failed
    // run would stay in the case.
    try {
        if (const QString problem = tapeFileProblemOf(casePath_, tape_); !problem.isEmpty()) {
            checkTapeFiles();
            showMessage(tr("Not replayed: %1 (Ctrl+L)").arg(problem), 0);
            return false;
        }
    } catch (const std::exception& error) {
        showMessage(QString::fromStdString(error.what()));
        return false;
    }
    if (const QString reason = nothingToVerify(); !reason.isEmpty())
        showMessage(tr("Warning: this replay can verify nothing: %1").arg(reason), 0);
    // New results show under All runs, beside what earlier runs found.
    if (runs_->chosenRun() != TransactionTable::kEveryRun)
        runs_->chooseRun(TransactionTable::kEveryRun);
    request.tapeId = tape_;
    request.seed = seed;
    request.seedSource = source;
    request.device = replayDevice().toStdString();
    // The calibration chosen last (Replay Random Sample…) judges every replay across
    // environments when it is for the run's pair; an unreadable one stops the replay here.
    if (const QString calibration = Settings::replayCalibration(); !calibration.isEmpty()) {
        try {
            request.calibration = loadCalibration(calibration.toStdString());
        } catch (const std::exception& error) {
            showMessage(tr("Not replayed: %1 (choose another calibration in Replay Random Sample…)").arg(QString::fromStdString(error.what())), 0);
            return false;
        }
    }
    // Outcomes arrive on the job's thread; the window re-reads results at most every 400 ms.
    auto pending = std::make_shared<std::atomic<bool>>(false);
    QPointer<MainWindow> window(this);
    request.onOutcome = [window, pending](const TransactionOutcome&) {
        if (!pending->exchange(true))
            QMetaObject::invokeMethod(window, [window, pending] {
                pending->store(false);
                if (window && !window->resultsTimer_->isActive())
                    window->resultsTimer_->start();
            }, Qt::QueuedConnection);
    };
    return jobs_->start(replayJob(casePath_, request, tr("Replaying %1 on %2").arg(spec, replayDevice())));
}

bool MainWindow::exportReport(const QString& path)
{
    if (casePath_.isEmpty() || tape_ == 0) {
        showMessage(tr("Nothing to report: open a case with a replayed tape first."));
        return false;
    }
    const std::optional<ReportFormat> format = reportFormatOfPath(path.toStdString());
    if (!format) {
        showMessage(tr("%1: a report is written as .pdf, .html, .json or .csv").arg(fileName(path)));
        return false;
    }
    return startReportExport(*jobs_, documents_, casePath_, reportOptions(), *format, path);
}

ReportOptions MainWindow::reportOptions() const
{
    ReportOptions options;
    options.tapeId = tape_;
    // The run chosen in the run list; with All runs, the newest (the report lists the others).
    options.runId = std::max<qint64>(0, runs_->chosenRun());
    return options;
}

bool MainWindow::exportSignedVerdict(const QString& path)
{
    if (casePath_.isEmpty() || tape_ == 0) {
        showMessage(tr("Nothing to sign: open a case with a replayed tape first."));
        return false;
    }
    return jobs_->start(signedVerdictJob(casePath_, reportOptions(), path), {}, true);
}

void MainWindow::exportSignedVerdictDialog()
{
    const QFileInfo caseFile(casePath_);
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Signed Verdict"),
                                                      caseFile.absoluteDir().filePath(caseFile.completeBaseName() + QStringLiteral("-verdict.intoto.json")),
                                                      tr("In-toto attestations (*.intoto.json);;All files (*)"));
    if (!path.isEmpty())
        exportSignedVerdict(path);
}

bool MainWindow::checkDataset(const QString& commitment, const QString& folder)
{
    if (casePath_.isEmpty() || tape_ == 0) {
        showMessage(tr("Nothing to check: open a case with a tape first."));
        return false;
    }
    return jobs_->start(datasetCheckJob(casePath_, tape_, commitment, folder));
}

bool MainWindow::matchWeights(const QString& model, ProvenanceKind kind)
{
    if (casePath_.isEmpty() || tape_ == 0) {
        showMessage(tr("Nothing to match: open a case with a tape first."));
        return false;
    }
    return jobs_->start(weightMatchJob(casePath_, tape_, model, kind));
}

bool MainWindow::mergeShardResults(const QStringList& shardFiles)
{
    if (casePath_.isEmpty()) {
        showMessage(tr("Nothing to merge into: open the case the shards were made from first."));
        return false;
    }
    if (shardFiles.isEmpty()) {
        showMessage(tr("No shard case chosen: pick every SHARD.zkaudit of the sharded replay."));
        return false;
    }
    return jobs_->start(mergeShardsJob(casePath_, shardFiles));
}

void MainWindow::mergeShardResultsDialog()
{
    const QStringList files = QFileDialog::getOpenFileNames(this, tr("Merge Shard Results"), QFileInfo(casePath_).absolutePath(),
                                                            tr("Shard cases (*.zkaudit)"));
    if (!files.isEmpty())
        mergeShardResults(files);
}

bool MainWindow::exportClusterJob(ClusterJob job, bool kubernetes, const QString& path)
{
    if (casePath_.isEmpty() || tape_ == 0) {
        showMessage(tr("Nothing to export: open a case with a tape first."));
        return false;
    }
    job.casePath = QFileInfo(casePath_).absoluteFilePath().toStdString();
    // Slurm nodes run this build's zkdv-audit from the shared file system; pods the image's.
    if (job.auditExecutable.empty())
        job.auditExecutable = kubernetes ? std::string("zkdv-audit")
                                         : QDir(QCoreApplication::applicationDirPath()).absoluteFilePath(QStringLiteral("zkdv-audit")).toStdString();
    job.tapeId = tape_;
    return jobs_->start(clusterJobExportJob(casePath_, job, kubernetes, path), {}, true);
}

void MainWindow::exportClusterJobDialog()
{
    ClusterJobDialog dialog(Settings::sampleSpec(), this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    const bool kubernetes = dialog.scheduler() == ClusterScheduler::Kubernetes;
    const QFileInfo caseFile(casePath_);
    const QString suggested = caseFile.absoluteDir().filePath(caseFile.completeBaseName() + (kubernetes ? QStringLiteral("-shards.yaml")
                                                                                                        : QStringLiteral("-shards.sbatch")));
    const QString path = QFileDialog::getSaveFileName(this, tr("Export Cluster Job"), suggested,
                                                      kubernetes ? tr("Kubernetes manifests (*.yaml)") : tr("Slurm scripts (*.sbatch *.sh)"));
    if (!path.isEmpty())
        exportClusterJob(dialog.job(), kubernetes, path);
}

void MainWindow::checkDatasetDialog()
{
    DatasetCheckDialog dialog(this);
    if (dialog.exec() == QDialog::Accepted)
        checkDataset(dialog.commitment(), dialog.folder());
}

void MainWindow::matchWeightsDialog()
{
    WeightMatchDialog dialog(this);
    if (dialog.exec() == QDialog::Accepted)
        matchWeights(dialog.model(), dialog.kind());
}

void MainWindow::exportReportDialog()
{
    const QStringList suffixes = {QStringLiteral("pdf"), QStringLiteral("html"), QStringLiteral("json"), QStringLiteral("csv")};
    const QStringList filters = {tr("PDF (*.pdf)"), tr("HTML (*.html)"), tr("JSON (*.json)"), tr("CSV (*.csv)")};
    const QFileInfo caseFile(casePath_);
    QString filter = filters.front();
    QString path = QFileDialog::getSaveFileName(this, tr("Export Audit Report"),
                                                caseFile.absoluteDir().filePath(caseFile.completeBaseName() + QStringLiteral("-report.pdf")),
                                                filters.join(QStringLiteral(";;")), &filter);
    if (path.isEmpty())
        return;
    // The format follows the extension; without a known one, the chosen filter's.
    if (!reportFormatOfPath(path.toStdString()))
        path += QLatin1Char('.') + suffixes.value(std::max<qsizetype>(0, filters.indexOf(filter)));
    exportReport(path);
}

void MainWindow::refreshResults()
{
    // The run shown stays shown: results of a new run appear under All runs (and in the run
    // list) without hiding what earlier runs found.
    runs_->refresh();
    model_->refresh();
    charts_->refresh();
    details_->reload();
}

qint64 MainWindow::shownRun() const { return runs_->chosenRun(); }

void MainWindow::showRun(qint64 runId) { runs_->chooseRun(runId); }

void MainWindow::newCase()
{
    const QString path = QFileDialog::getSaveFileName(this, tr("New Audit Case"), QDir::homePath(), tr("Audit cases (*.zkaudit)"));
    if (path.isEmpty())
        return;
    const QString withSuffix = path.endsWith(QStringLiteral(".zkaudit")) ? path : path + QStringLiteral(".zkaudit");
    if (QFileInfo::exists(withSuffix)) {
        showMessage(tr("%1 exists; open it with Ctrl+O instead.").arg(withSuffix));
        return;
    }
    openCase(withSuffix);
}

void MainWindow::openCaseDialog()
{
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Audit Case"), QString(), tr("Audit cases (*.zkaudit);;All files (*)"));
    if (!path.isEmpty())
        openPaths({path});
}

void MainWindow::addFilesDialog()
{
    const QStringList paths = QFileDialog::getOpenFileNames(this, tr("Add Tapes or Sealed Programs"), QString(),
                                                            tr("Tapes (*.zkdv);;All files (*)"));
    if (!paths.isEmpty())
        openPaths(paths);
}

QString MainWindow::nothingToVerify() const
{
    if (casePath_.isEmpty() || tape_ == 0)
        return {};
    try {
        return whyNothingToVerify(casePath_, tape_);
    } catch (const std::exception& error) {
        return QString::fromStdString(error.what());
    }
}

bool MainWindow::confirmReplayable()
{
    const QString reason = nothingToVerify();
    if (reason.isEmpty())
        return true;
    return QMessageBox::warning(this, tr("Nothing to verify"),
                                tr("This replay can verify nothing: %1.\n\nReplay anyway? Its report will say that nothing was verified.")
                                    .arg(reason),
                                QMessageBox::Yes | QMessageBox::No, QMessageBox::No) == QMessageBox::Yes;
}

void MainWindow::replaySelected()
{
    if (!confirmReplayable())
        return;
    QStringList ids;
    for (const QModelIndex& row : table_->selectionModel()->selectedRows())
        ids << QString::number(model_->transactionAt(row.row()));
    if (ids.isEmpty()) {
        showMessage(tr("Select transactions in the table first (click, Shift+click, Ctrl+click)."));
        return;
    }
    startReplay(QStringLiteral("ids:") + ids.join(QLatin1Char(',')));
}

void MainWindow::replaySample()
{
    if (!confirmReplayable())
        return;
    // A fresh seed every time, never the last one: a seed the trainer could guess voids the
    // bound (docs/replay.md, "The seed").
    SampleDialog dialog(transactionCount_, Settings::sampleSpec(), this, Settings::replayCalibration());
    if (dialog.exec() != QDialog::Accepted)
        return;
    Settings::setSampleSpec(dialog.selectionSpec());
    Settings::setReplayCalibration(dialog.calibrationPath());
    startReplay(dialog.selectionSpec(), dialog.seed(), dialog.seedSource());
}

void MainWindow::replayTopQ()
{
    if (!confirmReplayable())
        return;
    TopQDialog dialog(casePath_, tape_, Settings::topQ(), this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    Settings::setTopQ(dialog.q());
    startReplay(dialog.selectionSpec());
}

bool MainWindow::showsStartPage() const { return pages_->currentWidget() == start_; }

void MainWindow::showHelp()
{
    if (!help_)
        help_ = new HelpDialog(this, this);
    help_->show();
    help_->raise();
    help_->activateWindow();
}

void MainWindow::showAbout() { QMessageBox::about(this, tr("About ZKDV Audit Workstation"), aboutText(*workerProbe_)); }

void MainWindow::copyFromFocus(bool valueOnly)
{
    const QWidget* focus = QApplication::focusWidget();
    auto within = [focus](const QWidget* pane) { return focus && pane && (focus == pane || pane->isAncestorOf(focus)); };
    if (within(table_))
        valueOnly ? QApplication::clipboard()->setText(table_->currentValueText()) : copySelectedRows();
    else if (within(overview_))
        QApplication::clipboard()->setText(overview_->copyText(!valueOnly));
    else if (within(messageLog_) && !valueOnly)
        messageLog_->copySelection();
    else
        showMessage(tr("Nothing to copy here: select rows in the table, the case tree or the messages first."));
}

void MainWindow::copySelectedRows()
{
    int rows = 0, selected = 0;
    QApplication::clipboard()->setText(table_->selectedRowsText(&rows, &selected));
    showMessage(rows < selected ? tr("Copied the first %L1 of %L2 selected rows.").arg(rows).arg(selected) : tr("Copied %L1 rows.").arg(rows));
}

void MainWindow::updateRowCount()
{
    const int rows = model_->rowCount();
    const bool filtered = quickFilter_->currentIndex() != 0 || !textFilter_->text().trimmed().isEmpty();
    if (tape_ == 0) {
        rowCount_->clear();
        table_->setEmptyText(QString());
        return;
    }
    rowCount_->setText(filtered ? tr("%L1 of %L2 transactions").arg(rows).arg(transactionCount_) : tr("%L1 transactions").arg(rows));
    QString empty;
    if (rows == 0 && transactionCount_ == 0)
        empty = tr("This tape holds no transactions.");
    else if (rows == 0)
        empty = tr("No transaction matches the filter (%1%2).\nChoose “All transactions” (Alt+0) or clear the text filter (Ctrl+F).")
                    .arg(quickFilter_->currentText(), textFilter_->text().trimmed().isEmpty() ? QString() : tr(", “%1”").arg(textFilter_->text().trimmed()));
    table_->setEmptyText(empty);
}

void MainWindow::tableSelectionChanged()
{
    const int row = table_->rowToShow();
    // The note being typed is settled before its transaction goes; Cancel puts the
    // selection back on it.
    if (noteKeptOn_)
        return;  // the selection is on its way back to the note kept (one click signals twice)
    const std::optional<quint64> shown = details_->shownTransaction();
    const std::optional<quint64> next = row >= 0 ? std::optional<quint64>(model_->transactionAt(row)) : std::nullopt;
    if (next != shown && !details_->settlePendingNote()) {
        if (shown) {
            noteKeptOn_ = shown;
            QTimer::singleShot(0, this, [this] {
                const quint64 index = *noteKeptOn_;
                noteKeptOn_.reset();
                selectTransaction(index);
            });
        }
        return;
    }
    if (next) {
        charts_->selectTransaction(*next);
        details_->showTransaction(*next, model_->runId());
    } else {
        charts_->clearSelection();
        details_->clearTransaction();
    }
}

void MainWindow::selectTransaction(quint64 index)
{
    const int row = model_->rowOfTransaction(index);
    if (row < 0) {
        showMessage(tr("Transaction %1 is hidden by the current filter.").arg(index));
        return;
    }
    const QModelIndex cell = model_->index(row, 0);
    table_->selectionModel()->setCurrentIndex(cell, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    table_->scrollTo(cell, QAbstractItemView::PositionAtCenter);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    if (!event->mimeData()->hasUrls())
        return;
    for (const QUrl& url : event->mimeData()->urls())
        if (!url.isLocalFile()) {
            showMessage(tr("Only local files can be dropped here (%1 is not one).").arg(url.toDisplayString()));
            return;
        }
    if (jobs_->isBusy()) {
        showMessage(tr("Busy: %1. Drop again when it has finished, or cancel it (Esc).").arg(jobs_->current()->title()));
        return;
    }
    event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    QStringList paths;
    for (const QUrl& url : event->mimeData()->urls())
        if (url.isLocalFile())
            paths << url.toLocalFile();
    if (paths.isEmpty())
        return;
    event->acceptProposedAction();
    openPaths(paths);
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    if (!details_->settlePendingNote()) {
        event->ignore();  // Cancel: the window stays, with the note
        return;
    }
    jobs_->cancel();  // the job's destructor waits for its thread
    Settings::setWindowGeometry(saveGeometry());
    Settings::setWindowState(saveState());
    event->accept();
}

}  // namespace zkdv::ui
