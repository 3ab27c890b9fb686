#pragma once
// The workstation's transaction table: one tape's transactions with a replay run's
// verdicts, sortable and filterable, fetched from the case in windows as the view scrolls.

#include <QAbstractTableModel>
#include <QHash>
#include <QList>
#include <QSet>
#include <QString>

#include <memory>
#include <vector>

#include "zkdv/store/transaction_table.h"

namespace zkdv {
class CaseStore;
class Database;
}

namespace zkdv::ui {

class TransactionTableModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column {
        IndexColumn,
        LossColumn,
        LearningRateColumn,
        UpdateNormColumn,
        SampledChecksColumn,
        SegmentColumn,
        VerdictColumn,
        WorstDivergenceColumn,
        NoteColumn,  // the auditor's flag and note (zkdv/store/transaction_notes.h)
        ColumnCount
    };
    enum class QuickFilter { All, Diverged, NotReplayed, SampledChecks, TopQ };
    // Qt::UserRole: the row's transaction index (quint64) in every column.
    static constexpr int TransactionIndexRole = Qt::UserRole;
    // The Qt::DisplayRole text, read now even when rows are fetched in the background (Copy).
    static constexpr int DisplayNowRole = Qt::UserRole + 1;
    static constexpr int WindowRows = 256;  // rows read from the case at a time

    explicit TransactionTableModel(QObject* parent = nullptr);
    ~TransactionTableModel() override;

    // Rows not yet cached are read by a loader thread (RowLoader) instead of on the caller's:
    // their index shows at once, the other cells when the window arrives (dataChanged).
    void setBackgroundFetch(bool on);
    bool backgroundFetch() const { return loader_ != nullptr; }
    int pendingWindows() const { return static_cast<int>(pending_.size()); }

    // Opens the case read-only on this thread's own connection; an empty path shows no rows.
    void setCase(const QString& casePath, qint64 tapeId);
    void setRun(qint64 runId);  // 0: the newest run of the tape, followed by refresh()
    void setQuickFilter(QuickFilter filter, int topq = 10);
    void setTextFilter(const QString& text);
    // Re-reads counts and verdicts (after an ingest or as replay results arrive), keeping
    // sort, filter and, where the rows stay, the selection.
    void refresh();

    QString casePath() const { return casePath_; }
    qint64 tapeId() const { return tapeId_; }
    qint64 runId() const;  // the run shown (0: none)
    // Run, sort and filter as shown, for a copy of the table on another connection.
    TransactionTable::View tableView() const;
    quint64 transactionAt(int row) const;
    int rowOfTransaction(quint64 index) const;  // -1 when filtered out

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;

Q_SIGNALS:
    // A case that cannot be read (the model then shows no rows); for the status bar.
    void problem(const QString& message);

private:
    // `now`: read on this thread when the window is not cached, even with background fetch.
    const TransactionRow* rowAt(int row, bool now = false) const;
    void windowLoaded(quint64 generation, int window, const QString& problem);
    void cacheWindow(int window, std::vector<TransactionRow> rows) const;
    void applyFilter();
    void fail(const QString& what, const std::exception& error);
    // The transactions behind persistent indexes, and the indexes moved to where those
    // transactions are after a re-sort or re-read (the selection follows its transactions).
    std::vector<std::uint64_t> transactionsOf(const QModelIndexList& indexes) const;
    void movePersistentIndexes(const QModelIndexList& before, const std::vector<std::uint64_t>& transactions);
    void failLater(const std::exception& error) const;
    void closeCase();
    void clearWindows() const;
    QString indexText(quint64 index) const;

    QString casePath_;
    qint64 tapeId_ = 0;
    quint64 runOffset_ = 0;  // the run's transactions on the tapes before this one (a resumed run)
    qint64 requestedRun_ = 0;
    QuickFilter quickFilter_ = QuickFilter::All;
    int topq_ = 10;
    QString text_;
    int sortColumn_ = IndexColumn;
    Qt::SortOrder sortOrder_ = Qt::AscendingOrder;

    std::unique_ptr<CaseStore> case_;
    std::unique_ptr<TransactionTable> table_;
    int rows_ = 0;

    // A small LRU cache of row windows, keyed by window number (row / WindowRows).
    mutable QHash<int, std::vector<TransactionRow>> windows_;
    mutable QList<int> recent_;  // most recently used first
    mutable bool fetchFailed_ = false;

    // Background fetch: the loader's thread, and the windows asked for in this generation
    // (bumped whenever the cached windows are dropped).
    class QThread* loaderThread_ = nullptr;
    class RowLoader* loader_ = nullptr;
    mutable quint64 generation_ = 0;
    mutable QSet<int> pending_;
};

}  // namespace zkdv::ui
