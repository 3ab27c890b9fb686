#pragma once
// The workstation's transaction table: one tape's transactions with a replay run's
// verdicts, sortable and filterable, fetched from the case in windows as the view scrolls.

#include <QAbstractTableModel>
#include <QHash>
#include <QList>
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
    static constexpr int WindowRows = 256;  // rows read from the case at a time

    explicit TransactionTableModel(QObject* parent = nullptr);
    ~TransactionTableModel() override;

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
    const TransactionRow* rowAt(int row) const;
    void applyFilter();
    void fail(const QString& what, const std::exception& error);
    // The transactions behind persistent indexes, and the indexes moved to where those
    // transactions are after a re-sort or re-read (the selection follows its transactions).
    std::vector<std::uint64_t> transactionsOf(const QModelIndexList& indexes) const;
    void movePersistentIndexes(const QModelIndexList& before, const std::vector<std::uint64_t>& transactions);
    void failLater(const std::exception& error) const;
    void closeCase();
    void clearWindows() const;

    QString casePath_;
    qint64 tapeId_ = 0;
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
};

}  // namespace zkdv::ui
