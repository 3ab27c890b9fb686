#include "models/transaction_table_model.h"

#include <QBrush>
#include <QThread>
#include <QColor>
#include <QGuiApplication>
#include <QMetaObject>

#include <algorithm>
#include <climits>
#include <cmath>
#include <exception>

#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "models/row_loader.h"
#include "plots/verdict_palette.h"

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
    if (row.verdict == Verdict::Exact)
        return QStringLiteral("none: every check bit for bit");
    QString where = QString::fromStdString(row.worstTensor);
    if (!row.worstSlot.empty() && row.worstSlot != row.worstTensor)
        where += QLatin1Char(' ') + QString::fromStdString(row.worstSlot);
    if (std::isnan(row.worstMaxUlp))
        return where;
    return QStringLiteral("%1: %2 ULP").arg(where, QString::number(row.worstMaxUlp, 'g', 3));
}


QString verdictText(const TransactionRow& row)
{
    if (!row.verdict)
        return {};
    QString text = VerdictPalette::label(*row.verdict);
    if (!row.toleranceCriterion.empty())
        text += QStringLiteral(" (%1)").arg(QString::fromStdString(row.toleranceCriterion).replace(QStringLiteral("<="), QStringLiteral("≤")));
    if (row.runsDisagree)
        text += QStringLiteral("  ≠ runs disagree");
    return text;
}

QString verdictToolTip(const TransactionRow& row)
{
    if (!row.verdict)
        return QObject::tr("Not replayed by the run shown");
    QString tip = QObject::tr("%1, from replay run %2").arg(VerdictPalette::label(*row.verdict)).arg(row.verdictRun);
    if (row.runCount > 1)
        tip += QObject::tr("\nthe newest of %1 runs that replayed this transaction").arg(row.runCount);
    if (row.runsDisagree)
        tip += QObject::tr("\nthose runs reached different verdicts: pick a run in the case panel to see each");
    if (!row.toleranceCriterion.empty())
        tip += QObject::tr("\nwithin tolerance because %1").arg(QString::fromStdString(row.toleranceCriterion));
    return tip;
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
    case TransactionTableModel::NoteColumn:
        return TransactionTable::Column::Note;
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

TransactionTableModel::~TransactionTableModel() { setBackgroundFetch(false); }

void TransactionTableModel::setBackgroundFetch(bool on)
{
    if (on == (loader_ != nullptr))
        return;
    if (on) {
        loaderThread_ = new QThread(this);
        loader_ = new RowLoader;
        loader_->moveToThread(loaderThread_);
        connect(loaderThread_, &QThread::finished, loader_, &QObject::deleteLater);
        connect(loader_, &RowLoader::loaded, this, &TransactionTableModel::windowLoaded, Qt::QueuedConnection);
        loaderThread_->start(QThread::LowPriority);
    } else {
        disconnect(loader_, nullptr, this, nullptr);
        loaderThread_->quit();
        loaderThread_->wait();
        delete loaderThread_;
        loaderThread_ = nullptr;
        loader_ = nullptr;  // deleted on its thread's finish
    }
    clearWindows();
}

void TransactionTableModel::windowLoaded(quint64 generation, int window, const QString& problem)
{
    if (generation != generation_ || !loader_)
        return;  // asked for before the rows changed
    pending_.remove(window);
    if (!problem.isEmpty()) {
        Q_EMIT this->problem(tr("Cannot read transactions of %1: %2").arg(casePath_, problem));
        return;
    }
    std::vector<TransactionRow> rows = loader_->take(generation, window);
    if (rows.empty())
        return;
    const int first = window * WindowRows;
    const int last = std::min(rows_ - 1, first + static_cast<int>(rows.size()) - 1);
    cacheWindow(window, std::move(rows));
    if (first <= last)
        Q_EMIT dataChanged(index(first, 0), index(last, ColumnCount - 1));
}

void TransactionTableModel::cacheWindow(int window, std::vector<TransactionRow> rows) const
{
    if (windows_.size() >= kCachedWindows && !recent_.isEmpty())
        windows_.remove(recent_.takeLast());
    windows_.insert(window, std::move(rows));
    recent_.removeOne(window);
    recent_.prepend(window);
}

QString TransactionTableModel::indexText(quint64 index) const
{
    // A tape of a resumed run: its own index (what selections and filters use) and the run's.
    if (runOffset_ == 0)
        return QString::number(index);
    return tr("%1 (run %2)").arg(index).arg(runOffset_ + index);
}

void TransactionTableModel::setCase(const QString& casePath, qint64 tapeId)
{
    beginResetModel();
    closeCase();
    runOffset_ = 0;
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
            // Only the run's numbering: the tape's other checks (its counts against its rows)
            // are the case overview's, and must not keep the rows from showing.
            Statement offset = case_->database().prepare("SELECT transactions_before FROM tapes WHERE id = ?1");
            offset.bind(1, static_cast<std::int64_t>(tapeId));
            if (offset.step() && !offset.isNull(0))
                runOffset_ = static_cast<quint64>(std::max<std::int64_t>(0, offset.int64(0)));
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

TransactionTable::View TransactionTableModel::tableView() const
{
    return table_ ? table_->view() : TransactionTable::View{};
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

const TransactionRow* TransactionTableModel::rowAt(int row, bool now) const
{
    if (!table_ || row < 0 || row >= rows_ || fetchFailed_)
        return nullptr;
    const int window = row / WindowRows;
    auto found = windows_.find(window);
    if (found == windows_.end() && loader_ && !now) {
        if (!pending_.contains(window)) {
            pending_.insert(window);
            QMetaObject::invokeMethod(loader_, [loader = loader_, path = casePath_, tape = tapeId_, generation = generation_,
                                                view = table_->view(), window] { loader->load(path, tape, generation, view, window, WindowRows); });
        }
        return nullptr;
    }
    if (found == windows_.end()) {
        std::vector<TransactionRow> rows;
        try {
            rows = table_->rows(static_cast<std::uint64_t>(window) * WindowRows, WindowRows);
        } catch (const std::exception& error) {
            failLater(error);
            return nullptr;
        }
        cacheWindow(window, std::move(rows));
        found = windows_.find(window);
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
    const bool now = role == DisplayNowRole;
    if (now)
        role = Qt::DisplayRole;
    if (role == TransactionIndexRole)
        return QVariant::fromValue<quint64>(transactionAt(index.row()));
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole && role != Qt::ForegroundRole && role != Qt::BackgroundRole &&
        role != Qt::TextAlignmentRole)
        return {};
    const TransactionRow* row = rowAt(index.row(), now);
    if (!row) {
        // Still on its way from the loader: the index is known already (the order is here).
        if (role == Qt::DisplayRole && index.column() == IndexColumn && table_ && !fetchFailed_)
            return indexText(transactionAt(index.row()));
        return {};
    }
    const int column = index.column();
    switch (role) {
    case Qt::DisplayRole:
        switch (column) {
        case IndexColumn:
            return indexText(row->index);
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
            return verdictText(*row);
        case WorstDivergenceColumn:
            return worstDivergenceText(*row);
        case NoteColumn:
            return noteText(*row);
        }
        break;
    case Qt::ToolTipRole:
        if (column == VerdictColumn)
            return verdictToolTip(*row);
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
        // The cells round; the tooltip gives the whole number (17 digits: a double read back
        // exactly).
        if (column == LossColumn && !std::isnan(row->loss))
            return QString::number(row->loss, 'g', 17);
        if (column == LearningRateColumn && !std::isnan(row->lr))
            return QString::number(row->lr, 'g', 17);
        if (column == NoteColumn && !row->note.empty())
            return QString::fromStdString(row->note);
        break;
    case Qt::ForegroundRole:
    case Qt::BackgroundRole:
        if (column == VerdictColumn) {
            if (row->verdict) {
                const QPalette palette = QGuiApplication::palette();
                return QBrush(role == Qt::ForegroundRole ? VerdictPalette::cellText(*row->verdict, palette)
                                                         : VerdictPalette::cellBackground(*row->verdict, palette));
            }
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
            return tr("Verdict of the replay run shown; with all runs, the newest run that replayed the transaction "
                      "(empty: not replayed)");
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
    pending_.clear();
    ++generation_;  // windows the loader is reading now belong to the rows before
}

}  // namespace zkdv::ui
