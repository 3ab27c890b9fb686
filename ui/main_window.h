#pragma once
// The workstation's window: the case overview, the transaction table, the charts, and the
// actions an auditor takes (open, ingest by drag-and-drop, replay, cancel).

#include <QMainWindow>
#include <QPointer>
#include <QStringList>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "report/report_document.h"
#include "widgets/transaction_table_view.h"
#include "zkdv/audit/audit_seed.h"
#include "zkdv/store/provenance_checks.h"
#include "zkdv/workflow/cluster_job.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QMenu;
class QStackedWidget;
class QTimer;

namespace zkdv::ui {

class BackgroundJob;
class CaseOverview;
class DisplayFilterBar;
class FindingBanner;
class ChartPanel;
class HelpDialog;
class JobProgressFrame;
class JobRunner;
class MessageLog;
class MissingTapeBar;
class ReplayWorkerProbe;
class RecordBytesPane;
class RunList;
class StartPage;
class TapeHeader;
class TransactionDetailPane;
class TransactionTableModel;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Cases are opened; tapes, sealed programs and folders of them are ingested into the open
    // case (a new case next to the first tape when none is open). Anything else is named in
    // the status bar with the reason.
    void openPaths(const QStringList& paths);
    bool openCase(const QString& casePath);
    // Replays `spec` (a selection spec such as "random:100") on the chosen device, with
    // `seed` as `source` chose it; no seed: one drawn from the operating system as it starts.
    bool startReplay(const QString& spec, std::optional<quint64> seed = std::nullopt, SeedSource source = SeedSource::Given);
    // Writes the audit report of the current tape's newest replay run to `path`, in the
    // format its extension names (.pdf, .html, .json, .csv): the data is built in the
    // background, PDF and HTML are rendered on this thread (their charts are widgets).
    // jobFinished says how it went.
    bool exportReport(const QString& path);
    // Writes the current tape's verdict (of the run exportReport would report) signed with the
    // auditor's own key, as a Sigstore bundle (docs/signing.md), in the background; jobFinished
    // says how it went.
    bool exportSignedVerdict(const QString& path);
    // Writes the report of the banner's first reportable finding (a tape that could not be
    // ingested) to `path`; false when there is none or it cannot be written.
    bool exportFindingReport(const QString& path);
    // Writes every row of the table as shown (run, sort, filter) to `path` as CSV, in the
    // background; jobFinished says how it went.
    bool exportTableCsv(const QString& path);
    // Checks the dataset commitment `commitment` (and, unless `folder` is empty, the data
    // there) for the current tape, in the background, and keeps the outcome in the case,
    // where the overview shows it; jobFinished says how it went.
    bool checkDataset(const QString& commitment, const QString& folder);
    // Matches the model at `model` with the current tape's snapshot 0 or final state (`kind`),
    // in the background, and keeps the outcome in the case; jobFinished says how it went.
    bool matchWeights(const QString& model, ProvenanceKind kind);
    // Merges the shard cases `shardFiles` of a sharded replay into the open case as one run
    // (docs/replay.md, "Sharded replays"), in the background; a bad shard refuses the merge
    // and leaves the case as it was. jobFinished says how it went.
    bool mergeShardResults(const QStringList& shardFiles);
    // Writes `job` for the open case (its path and this build's zkdv-audit filled in) to
    // `path` as a Slurm array script, or a Kubernetes Indexed Job manifest when `kubernetes`,
    // in the background; jobFinished says how it went and how to submit it.
    bool exportClusterJob(ClusterJob job, bool kubernetes, const QString& path);
    FindingBanner* findingBanner() const { return banner_; }
    MissingTapeBar* missingTapeBar() const { return missingBar_; }
    // Points tape `tapeId` of the open case at `path` (its file moved), in the background;
    // jobFinished says whether it was the same tape.
    bool locateTape(qint64 tapeId, const QString& path);

    QString casePath() const { return casePath_; }
    qint64 currentTape() const { return tape_; }
    TransactionTableModel* transactionModel() const { return model_; }
    TransactionTableView* transactionView() const { return table_; }
    TapeHeader* tapeHeader() const { return tapeHeader_; }
    ChartPanel* charts() const { return charts_; }
    StartPage* startPage() const { return start_; }
    RunList* runList() const { return runs_; }
    // The run the table, the charts and the report show (TransactionTable::kEveryRun: all).
    qint64 shownRun() const;
    void showRun(qint64 runId);
    bool showsStartPage() const;
    MessageLog* messageLog() const { return messageLog_; }
    TransactionDetailPane* detailPane() const { return details_; }
    RecordBytesPane* recordBytesPane() const { return recordBytes_; }
    // The bytes pane is shown and its tab in front (it reads records only then).
    bool recordBytesInView() const;
    BackgroundJob* currentJob() const;
    QString replayDevice() const;

Q_SIGNALS:
    // After every background job; ok false when it failed or was cancelled.
    void jobFinished(bool ok, const QString& message);
    void caseChanged(const QString& casePath);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

private:
    void createActions();
    void createCentralWidgets();
    void updateRecentFilesMenu();
    void updateActions();
    void setTape(qint64 tapeId);
    // After every job (JobRunner::finished): the result in the status bar, and the case read
    // again unless the job only read it.
    void jobDone(bool ok, const QString& message, bool readsOnly);
    // `createdCase`: the case this ingest's drop created, removed again (from disk and the
    // recent files) when no tape could be ingested into it.
    void ingest(const QStringList& files, bool allowIncomplete = false, const QString& createdCase = QString());
    void ingestReadablePart(const QStringList& tapes);
    // Opens (creating it when missing) the case named after `tape`, beside it; `created` gets
    // its path when this call created it.
    bool openCaseBeside(const QString& tape, QString* created);
    void exportFindingReportDialog();
    void discardEmptyCase(const QString& casePath);
    void checkTapeFiles();
    void locateTapeDialog(qint64 tapeId);
    void refreshResults();
    void newCase();
    void openCaseDialog();
    void addFilesDialog();
    // Why a replay of the current tape could verify nothing ("" when it can): a program that
    // cannot be re-executed or that the case lacks.
    QString nothingToVerify() const;
    // Asks before a replay that would verify nothing; true to go on.
    bool confirmReplayable();
    void replaySelected();
    void replaySample();
    void replayTopQ();
    void exportReportDialog();
    void exportSignedVerdictDialog();
    void checkDatasetDialog();
    void matchWeightsDialog();
    void mergeShardResultsDialog();
    void exportClusterJobDialog();
    // The report of the tape in view: the run chosen in the run list, with All runs the newest.
    ReportOptions reportOptions() const;
    void updateRowCount();
    void copySelectedRows();
    // Edit > Copy (rows) and Copy Value, from the pane with the focus.
    void copyFromFocus(bool valueOnly);
    void showHelp();
    void showAbout();
    void tableSelectionChanged();
    void selectTransaction(quint64 index);
    void showMessage(const QString& message, int timeoutMs = 8000);
    // Clears a message shown to stay (timeout 0) when its cause is gone: the case changed, the
    // moved tapes were found.
    void clearStickyMessage();

    QString casePath_;
    QString stickyMessage_;  // the last message shown to stay, until its cause goes
    qint64 tape_ = 0;
    quint64 transactionCount_ = 0;
    CaseOverview* overview_ = nullptr;
    RunList* runs_ = nullptr;
    FindingBanner* banner_ = nullptr;
    MissingTapeBar* missingBar_ = nullptr;
    QAction* locateAction_ = nullptr;
    QAction* ingestPartAction_ = nullptr;
    QAction* exportFindingAction_ = nullptr;
    TransactionTableModel* model_ = nullptr;
    TransactionTableView* table_ = nullptr;
    TapeHeader* tapeHeader_ = nullptr;  // the tape's name and signer above the table
    ChartPanel* charts_ = nullptr;
    QComboBox* quickFilter_ = nullptr;
    QLineEdit* textFilter_ = nullptr;
    DisplayFilterBar* filterBar_ = nullptr;  // holds quickFilter_ and textFilter_
    QComboBox* device_ = nullptr;
    ReplayWorkerProbe* workerProbe_ = nullptr;  // created first in the constructor
    JobProgressFrame* progress_ = nullptr;
    JobRunner* jobs_ = nullptr;  // the one background job at a time
    const ReportDocuments documents_;  // PDF and HTML for writeReport
    QTimer* resultsTimer_ = nullptr;
    QMenu* recentMenu_ = nullptr;
    QList<QAction*> jobActions_;   // disabled while a job runs
    QList<QAction*> caseActions_;  // need an open case
    QList<QAction*> tapeActions_;  // need a tape in it
    QAction* cancelAction_ = nullptr;
    QStackedWidget* pages_ = nullptr;  // the start page while no case is open, else the workspace
    StartPage* start_ = nullptr;
    QWidget* workspace_ = nullptr;
    MessageLog* messageLog_ = nullptr;
    TransactionDetailPane* details_ = nullptr;
    RecordBytesPane* recordBytes_ = nullptr;
    std::optional<quint64> noteKeptOn_;  // Cancel kept an unsaved note: the selection goes back to it
    QLabel* rowCount_ = nullptr;    // "N of M transactions" in the status bar
    QPointer<HelpDialog> help_;
};

}  // namespace zkdv::ui
