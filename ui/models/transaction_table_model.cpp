#include "models/transaction_table_model.h"

#include <QBrush>
#include <QColor>
#include <QMetaObject>

#include <algorithm>
#include <climits>
#include <cmath>
#include <exception>

#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"

namespace zkdv::ui {

namespace {

constexpr int kCachedWindows = 32;  // 8,192 rows: several screens in either direction

QString number(double value, int digits)
{
    return std::isnan(value) ? QString() : QString::number(value, 'g', digits);
}

QString sampledChecksText(const TransactionRow& row)
{
    if (row.hasDeltas && row.hasStateDigest)
        return QStringLiteral("deltas, digest");
    if (row.hasDeltas)
        return QStringLiteral("deltas");
    if (row.hasStateDigest)
        return QStringLiteral("digest");
    return {};
}

// "[suspicious] lr jumps here": the flag in brackets (none is not shown), then the note's first line.
QString noteText(const TransactionRow& row)
{
    QString text = row.flag.empty() || row.flag == "none" ? QString() : QStringLiteral("[%1]").arg(QString::fromStdString(row.flag));
    const QString note = QString::fromStdString(row.note).section(QLatin1Char('\n'), 0, 0).trimmed();
    if (!note.isEmpty())
        text += (text.isEmpty() ? QString() : QStringLiteral(" ")) + note;
    return text;
}

QString worstDivergenceText(const TransactionRow& row)
{
    if (row.worstTensor.empty())
        return {};
    if (row.verdict == "exact")
        return QStringLiteral("none: every check bit for bit");
    QString where = QString::fromStdString(row.worstTensor);
    if (!row.worstSlot.empty() && row.worstSlot != row.worstTensor)
        where += QLatin1Char(' ') + QString::fromStdString(row.worstSlot);
    if (std::isnan(row.worstMaxUlp))
        return where;
    return QStringLiteral("%1: %2 ULP").arg(where, QString::number(row.worstMaxUlp, 'g', 3));
}

struct VerdictColors {
    QColor foreground;
    QColor background;
};

// Exact green, within tolerance amber, diverged red, unverifiable grey.
const VerdictColors* verdictColors(const std::string& verdict)
{
    static const VerdictColors exact{QColor(0x1b, 0x6e, 0x20), QColor(0xe3, 0xf4, 0xe3)};
    static const VerdictColors within{QColor(0x8a, 0x5a, 0x00), QColor(0xff, 0xf0, 0xc8)};
    static const VerdictColors diverged{QColor(0xb7, 0x1c, 0x1c), QColor(0xfd, 0xde, 0xde)};
    static const VerdictColors unverifiable{QColor(0x5f, 0x5f, 0x5f), QColor(0xea, 0xea, 0xea)};
    if (verdict == "exact")
        return &exact;
    if (verdict == "within-tolerance")
        return &within;
    if (verdict == "diverged")
        return &diverged;
    if (verdict == "unverifiable")
        return &unverifiable;
    return nullptr;
}

TransactionTable::Column tableColumn(int column)
{
    switch (column) {
    case TransactionTableModel::LossColumn:
        return TransactionTable::Column::Loss;
    case TransactionTableModel::LearningRateColumn:
        return TransactionTable::Column::LearningRate;
    case TransactionTableModel::UpdateNormColumn:
        return TransactionTable::Column::UpdateNorm;
    case TransactionTableModel::SampledChecksColumn:
        return TransactionTable::Column::SampledChecks;
    case TransactionTableModel::SegmentColumn:
        return TransactionTable::Column::Segment;
    case TransactionTableModel::VerdictColumn:
        return TransactionTable::Column::Verdict;
    case TransactionTableModel::WorstDivergenceColumn:
        return TransactionTable::Column::WorstDivergence;
    default:
        return TransactionTable::Column::Index;
    }
}

TransactionTable::QuickFilter tableFilter(TransactionTableModel::QuickFilter filter)
{
    switch (filter) {
    case TransactionTableModel::QuickFilter::Diverged:
        return TransactionTable::QuickFilter::Diverged;
    case TransactionTableModel::QuickFilter::NotReplayed:
        return TransactionTable::QuickFilter::NotReplayed;
    case TransactionTableModel::QuickFilter::SampledChecks:
        return TransactionTable::QuickFilter::SampledChecks;
    case TransactionTableModel::QuickFilter::TopQ:
        return TransactionTable::QuickFilter::TopQ;
    case TransactionTableModel::QuickFilter::All:
        break;
    }
    return TransactionTable::QuickFilter::All;
}

}  // namespace

TransactionTableModel::TransactionTableModel(QObject* parent) : QAbstractTableModel(parent) {}

TransactionTableModel::~TransactionTableModel() = default;

void TransactionTableModel::setCase(const QString& casePath, qint64 tapeId)
{
    beginResetModel();
    closeCase();
    casePath_ = casePath;
    tapeId_ = tapeId;
    if (!casePath.isEmpty()) {
        try {
            // Opened as every reader opens a case (CaseStore): it is a case, its schema is
            // current and holds nothing this build does not create.
            case_ = std::make_unique<CaseStore>(casePath.toStdString(), CaseStore::Access::ReadOnly);
            table_ = std::make_unique<TransactionTable>(case_->database(), tapeId);
            if (!table_->tapeExists())
                throw Error("case " + casePath.toStdString() + " holds no tape " + std::to_string(tapeId));
            table_->setRun(requestedRun_);
            table_->setSort(tableColumn(sortColumn_), sortOrder_ == Qt::AscendingOrder);
            applyFilter();
        } catch (const std::exception& error) {
            fail(tr("Cannot show the transactions of %1").arg(casePath), error);
        }
    }
    endResetModel();
}

void TransactionTableModel::setRun(qint64 runId)
{
    requestedRun_ = runId;
    if (!table_)
        return;
    beginResetModel();
    try {
        table_->setRun(runId);
        clearWindows();
        rows_ = static_cast<int>(std::min<std::uint64_t>(table_->rowCount(), INT_MAX));
    } catch (const std::exception& error) {
        fail(tr("Cannot show replay run %1").arg(runId), error);
    }
    endResetModel();
}

void TransactionTableModel::setQuickFilter(QuickFilter filter, int topq)
{
    quickFilter_ = filter;
    topq_ = std::max(1, topq);
    if (!table_)
        return;
    beginResetModel();
    try {
        applyFilter();
    } catch (const std::exception& error) {
        fail(tr("Cannot filter the transactions"), error);
    }
    endResetModel();
}

void TransactionTableModel::setTextFilter(const QString& text)
{
    text_ = text;
    if (!table_)
        return;
    beginResetModel();
    try {
        applyFilter();
    } catch (const std::exception& error) {
        fail(tr("Cannot filter the transactions by \"%1\"").arg(text), error);
    }
    endResetModel();
}

void TransactionTableModel::applyFilter()
{
    table_->setFilter(tableFilter(quickFilter_), text_.trimmed().toStdString(), static_cast<std::uint64_t>(topq_));
    clearWindows();
    rows_ = static_cast<int>(std::min<std::uint64_t>(table_->rowCount(), INT_MAX));
}

void TransactionTableModel::refresh()
{
    if (!table_) {
        if (!casePath_.isEmpty())
            setCase(casePath_, tapeId_);
        return;
    }
    // As for a sort: keep selection and scroll position where the number of rows stays,
    // moving the persistent indexes with their transactions.
    Q_EMIT layoutAboutToBeChanged({}, QAbstractItemModel::VerticalSortHint);
    const QModelIndexList before = persistentIndexList();
    const std::vector<std::uint64_t> transactions = transactionsOf(before);
    try {
        table_->refresh();
    } catch (const std::exception& error) {
        Q_EMIT layoutChanged({}, QAbstractItemModel::VerticalSortHint);
        beginResetModel();
        fail(tr("Cannot re-read the transactions"), error);
        endResetModel();
        return;
    }
    clearWindows();
    const int rows = static_cast<int>(std::min<std::uint64_t>(table_->rowCount(), INT_MAX));
    if (rows != rows_) {
        Q_EMIT layoutChanged({}, QAbstractItemModel::VerticalSortHint);
        beginResetModel();
        rows_ = rows;
        endResetModel();
        return;
    }
    movePersistentIndexes(before, transactions);
    Q_EMIT layoutChanged({}, QAbstractItemModel::VerticalSortHint);
    if (rows_ > 0)
        Q_EMIT dataChanged(index(0, 0), index(rows_ - 1, ColumnCount - 1));
}

void TransactionTableModel::sort(int column, Qt::SortOrder order)
{
    if (column < 0 || column >= ColumnCount)
        return;
    sortColumn_ = column;
    sortOrder_ = order;
    if (!table_)
        return;
    Q_EMIT layoutAboutToBeChanged({}, QAbstractItemModel::VerticalSortHint);
    const QModelIndexList before = persistentIndexList();
    const std::vector<std::uint64_t> transactions = transactionsOf(before);
    bool sorted = true;
    std::string failure;
    try {
        table_->setSort(tableColumn(column), order == Qt::AscendingOrder);
        movePersistentIndexes(before, transactions);
    } catch (const std::exception& error) {
        sorted = false;
        failure = error.what();
    }
    clearWindows();
    Q_EMIT layoutChanged({}, QAbstractItemModel::VerticalSortHint);
    if (!sorted) {
        beginResetModel();
        fail(tr("Cannot sort the transactions"), Error(failure));
        endResetModel();
    }
}

std::vector<std::uint64_t> TransactionTableModel::transactionsOf(const QModelIndexList& indexes) const
{
    std::vector<std::uint64_t> transactions;
    transactions.reserve(static_cast<std::size_t>(indexes.size()));
    for (const QModelIndex& index : indexes)
        transactions.push_back(transactionAt(index.row()));
    return transactions;
}

void TransactionTableModel::movePersistentIndexes(const QModelIndexList& before, const std::vector<std::uint64_t>& transactions)
{
    const std::vector<std::int64_t> now = table_->rowsOf(transactions);
    QModelIndexList after;
    after.reserve(before.size());
    for (qsizetype i = 0; i < before.size(); ++i) {
        const std::int64_t row = now[static_cast<std::size_t>(i)];
        after.append(row < 0 ? QModelIndex() : index(static_cast<int>(row), before[i].column()));
    }
    changePersistentIndexList(before, after);
}

qint64 TransactionTableModel::runId() const
{
    return table_ ? table_->effectiveRunId() : 0;
}

quint64 TransactionTableModel::transactionAt(int row) const
{
    if (!table_ || row < 0 || row >= rows_ || fetchFailed_)
        return 0;
    try {
        return table_->transactionAt(static_cast<std::uint64_t>(row));
    } catch (const std::exception& error) {
        failLater(error);
        return 0;
    }
}

int TransactionTableModel::rowOfTransaction(quint64 index) const
{
    if (!table_ || fetchFailed_)
        return -1;
    try {
        const std::optional<std::uint64_t> row = table_->rowOf(index);
        return row && *row < static_cast<std::uint64_t>(rows_) ? static_cast<int>(*row) : -1;
    } catch (const std::exception& error) {
        failLater(error);
        return -1;
    }
}

int TransactionTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : rows_;
}

int TransactionTableModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

const TransactionRow* TransactionTableModel::rowAt(int row) const
{
    if (!table_ || row < 0 || row >= rows_ || fetchFailed_)
        return nullptr;
    const int window = row / WindowRows;
    auto found = windows_.find(window);
    if (found == windows_.end()) {
        std::vector<TransactionRow> rows;
        try {
            rows = table_->rows(static_cast<std::uint64_t>(window) * WindowRows, WindowRows);
        } catch (const std::exception& error) {
            failLater(error);
            return nullptr;
        }
        if (windows_.size() >= kCachedWindows && !recent_.isEmpty())
            windows_.remove(recent_.takeLast());
        found = windows_.insert(window, std::move(rows));
        recent_.prepend(window);
    } else if (recent_.first() != window) {
        recent_.removeOne(window);
        recent_.prepend(window);
    }
    const std::size_t offset = static_cast<std::size_t>(row % WindowRows);
    return offset < found->size() ? &(*found)[offset] : nullptr;
}

QVariant TransactionTableModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.column() < 0 || index.column() >= ColumnCount)
        return {};
    const TransactionRow* row = rowAt(index.row());
    if (!row)
        return {};
    const int column = index.column();
    switch (role) {
    case Qt::DisplayRole:
        switch (column) {
        case IndexColumn:
            return QString::number(row->index);
        case LossColumn:
            return number(row->loss, 6);
        case LearningRateColumn:
            return number(row->lr, 4);
        case UpdateNormColumn:
            return number(row->updateNorm, 4);
        case SampledChecksColumn:
            return sampledChecksText(*row);
        case SegmentColumn:
            return QString::number(row->segment);
        case VerdictColumn:
            return QString::fromStdString(row->verdict);
        case WorstDivergenceColumn:
            return worstDivergenceText(*row);
        case NoteColumn:
            return noteText(*row);
        }
        break;
    case Qt::ToolTipRole:
        if (column == WorstDivergenceColumn && !row->worstTensor.empty()) {
            QString tip = worstDivergenceText(*row);
            if (!std::isnan(row->worstRelativeL2))
                tip += tr("\nrelative L2 difference: %1").arg(QString::number(row->worstRelativeL2, 'g', 4));
            if (!std::isnan(row->worstMaxUlp))
                tip += tr("\nlargest ULP distance: %1").arg(QString::number(row->worstMaxUlp, 'g', 17));
            return tip;
        }
        if (column == UpdateNormColumn && !std::isnan(row->maxUpdate))
            return tr("L2 norm of the update %1, largest element %2")
                .arg(QString::number(row->updateNorm, 'g', 17), QString::number(row->maxUpdate, 'g', 17));
        if (column == LossColumn && !std::isnan(row->loss))
            return QString::number(row->loss, 'g', 17);
        if (column == NoteColumn && !row->note.empty())
            return QString::fromStdString(row->note);
        break;
    case Qt::ForegroundRole:
    case Qt::BackgroundRole:
        if (column == VerdictColumn) {
            if (const VerdictColors* colors = verdictColors(row->verdict))
                return QBrush(role == Qt::ForegroundRole ? colors->foreground : colors->background);
        }
        break;
    case Qt::TextAlignmentRole:
        switch (column) {
        case IndexColumn:
        case LossColumn:
        case LearningRateColumn:
        case UpdateNormColumn:
        case SegmentColumn:
            return QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
        default:
            return QVariant(int(Qt::AlignLeft | Qt::AlignVCenter));
        }
    case TransactionIndexRole:
        return QVariant::fromValue<quint64>(row->index);
    default:
        break;
    }
    return {};
}

QVariant TransactionTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return QAbstractTableModel::headerData(section, orientation, role);
    if (role == Qt::DisplayRole) {
        switch (section) {
        case IndexColumn:
            return tr("Index");
        case LossColumn:
            return tr("Loss");
        case LearningRateColumn:
            return tr("LR");
        case UpdateNormColumn:
            return tr("Update norm");
        case SampledChecksColumn:
            return tr("Sampled checks");
        case SegmentColumn:
            return tr("Segment");
        case VerdictColumn:
            return tr("Replay verdict");
        case WorstDivergenceColumn:
            return tr("Worst divergence");
        case NoteColumn:
            return tr("Note");
        }
    }
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case IndexColumn:
            return tr("Transaction (optimizer step) index within the tape");
        case LearningRateColumn:
            return tr("Learning rate as recorded");
        case UpdateNormColumn:
            return tr("L2 norm of the whole parameter update");
        case SampledChecksColumn:
            return tr("What the record carries beyond fingerprints: full deltas, a state digest");
        case SegmentColumn:
            return tr("Snapshot segment a replay of this step starts from");
        case VerdictColumn:
            return tr("Verdict of the replay run shown (empty: not replayed)");
        case WorstDivergenceColumn:
            return tr("The comparison with the worst verdict and its largest ULP distance");
        case NoteColumn:
            return tr("The auditor's flag and note (edited in the transaction detail pane; filter: flag == suspicious, note contains \"…\")");
        default:
            break;
        }
    }
    return QAbstractTableModel::headerData(section, orientation, role);
}

Qt::ItemFlags TransactionTableModel::flags(const QModelIndex& index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
}

void TransactionTableModel::fail(const QString& what, const std::exception& error)
{
    closeCase();
    Q_EMIT problem(QStringLiteral("%1: %2").arg(what, QString::fromUtf8(error.what())));
}

void TransactionTableModel::failLater(const std::exception& error) const
{
    // A const accessor (data(), a lookup) cannot reset the model: show no rows from the
    // next turn of the event loop, and answer nothing until then.
    if (fetchFailed_)
        return;
    fetchFailed_ = true;
    auto* self = const_cast<TransactionTableModel*>(this);
    const QString message = tr("Cannot read the transactions of %1: %2").arg(casePath_, QString::fromUtf8(error.what()));
    QMetaObject::invokeMethod(
        self,
        [self, message] {
            self->beginResetModel();
            self->closeCase();
            self->endResetModel();
            Q_EMIT self->problem(message);
        },
        Qt::QueuedConnection);
}

void TransactionTableModel::closeCase()
{
    table_.reset();
    case_.reset();
    rows_ = 0;
    fetchFailed_ = false;
    clearWindows();
}

void TransactionTableModel::clearWindows() const
{
    windows_.clear();
    recent_.clear();
}

}  // namespace zkdv::ui
