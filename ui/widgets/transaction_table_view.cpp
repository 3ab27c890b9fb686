#include "widgets/transaction_table_view.h"

#include <QAction>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QResizeEvent>
#include <QSignalBlocker>

#include <algorithm>
#include <climits>

#include "models/transaction_table_model.h"
#include "settings/settings.h"

namespace zkdv::ui {

namespace {

// What an auditor reads first stays in view beside the detail pane at 1024 pixels: the
// verdict, how far the replay went off and the note; the recorded values follow.
constexpr int kDefaultOrder[] = {
    TransactionTableModel::IndexColumn,         TransactionTableModel::VerdictColumn,
    TransactionTableModel::WorstDivergenceColumn, TransactionTableModel::NoteColumn,
    TransactionTableModel::LossColumn,          TransactionTableModel::LearningRateColumn,
    TransactionTableModel::UpdateNormColumn,    TransactionTableModel::SampledChecksColumn,
    TransactionTableModel::SegmentColumn,
};
static_assert(std::size(kDefaultOrder) == TransactionTableModel::ColumnCount, "every column has a place");

}  // namespace

TransactionTableView::TransactionTableView(TransactionTableModel* model, QWidget* parent) : QTableView(parent), model_(model)
{
    setModel(model_);
    setSelectionBehavior(QAbstractItemView::SelectRows);
    setSelectionMode(QAbstractItemView::ExtendedSelection);
    setSortingEnabled(true);
    sortByColumn(TransactionTableModel::IndexColumn, Qt::AscendingOrder);
    setAlternatingRowColors(true);
    setWordWrap(false);
    // Tab leaves the table in one step; arrow keys move between its cells.
    setTabKeyNavigation(false);
    verticalHeader()->hide();
    verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);

    QHeaderView* header = horizontalHeader();
    header->setSectionsMovable(true);
    header->setStretchLastSection(true);
    header->setTextElideMode(Qt::ElideRight);
    header->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(header, &QWidget::customContextMenuRequested, this, &TransactionTableView::showHeaderMenu);
    restoring_ = true;
    const QByteArray saved = Settings::transactionColumns();
    // A layout saved for another set of columns is dropped, not half applied.
    userLayout_ = !saved.isEmpty() && header->restoreState(saved) && header->count() == TransactionTableModel::ColumnCount;
    if (!userLayout_)
        applyDefaultColumns();
    restoring_ = false;
    connect(header, &QHeaderView::sectionMoved, this, &TransactionTableView::saveColumns);
    connect(header, &QHeaderView::sectionResized, this, [this, header](int column) {
        // The last section stretches with the view: that is the window's size, not a choice.
        for (int visual = header->count() - 1; visual >= 0; --visual)
            if (!header->isSectionHidden(header->logicalIndex(visual))) {
                if (header->logicalIndex(visual) != column)
                    saveColumns();
                return;
            }
    });

    emptyState_ = new QLabel(viewport());
    emptyState_->setObjectName(QStringLiteral("emptyState"));
    emptyState_->setAlignment(Qt::AlignCenter);
    emptyState_->setWordWrap(true);
    emptyState_->setForegroundRole(QPalette::PlaceholderText);
    emptyState_->hide();

    // Cells arrive from the loader thread after the rows: fit when the first ones do, unless
    // the auditor sized the columns.
    connect(model_, &QAbstractItemModel::modelReset, this, [this] { fitPending_ = !userLayout_; });
    connect(model_, &QAbstractItemModel::dataChanged, this, &TransactionTableView::fitWhenRowsArrive);
    connect(model_, &QAbstractItemModel::rowsInserted, this, &TransactionTableView::fitWhenRowsArrive);

    setContextMenuPolicy(Qt::ActionsContextMenu);
    auto* exportTable = new QAction(tr("&Export Table as CSV…"), this);
    exportTable->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
    exportTable->setShortcutContext(Qt::WidgetShortcut);
    connect(exportTable, &QAction::triggered, this, &TransactionTableView::exportRequested);
    addAction(exportTable);
}

void TransactionTableView::applyDefaultColumns()
{
    QHeaderView* header = horizontalHeader();
    const bool wasRestoring = std::exchange(restoring_, true);
    for (int visual = 0; visual < TransactionTableModel::ColumnCount; ++visual) {
        header->showSection(kDefaultOrder[visual]);
        header->moveSection(header->visualIndex(kDefaultOrder[visual]), visual);
    }
    restoring_ = wasRestoring;
    userLayout_ = false;
    fitPending_ = true;
    fitColumns();
}

void TransactionTableView::resetColumns()
{
    applyDefaultColumns();
    Settings::setTransactionColumns({});
}

void TransactionTableView::fitColumns()
{
    QHeaderView* header = horizontalHeader();
    const bool wasRestoring = std::exchange(restoring_, true);
    for (int column = 0; column < TransactionTableModel::ColumnCount; ++column)
        if (!header->isSectionHidden(column))
            header->resizeSection(column, std::min(neededWidth(column), widthLimit(column)));
    restoring_ = wasRestoring;
}

int TransactionTableView::neededWidth(int column) const
{
    // The header's own hint covers its text and the sort arrow; the rows' hint covers the
    // rows in view (QTableView measures only those).
    return std::max(horizontalHeader()->sectionSizeHint(column), sizeHintForColumn(column));
}

int TransactionTableView::widthLimit(int column) const
{
    const int index = horizontalHeader()->isSectionHidden(TransactionTableModel::IndexColumn)
                          ? 0
                          : std::min(neededWidth(TransactionTableModel::IndexColumn), viewport()->width() / 4);
    const int shared = std::max(0, viewport()->width() - index);
    int limit = INT_MAX;
    switch (column) {
    case TransactionTableModel::VerdictColumn:
    case TransactionTableModel::WorstDivergenceColumn:
        limit = shared * 35 / 100;
        break;
    case TransactionTableModel::NoteColumn:
        limit = shared * 30 / 100;
        break;
    default:
        return INT_MAX;
    }
    // Never narrower than the header's own words.
    return std::max(limit, horizontalHeader()->sectionSizeHint(column));
}

void TransactionTableView::fitWhenRowsArrive()
{
    if (!fitPending_ || model_->rowCount() == 0)
        return;
    // The cells of the rows in view are there once the first of them shows more than its index.
    const QModelIndex first = model_->index(std::max(0, rowAt(0)), TransactionTableModel::LossColumn);
    if (!first.isValid() || first.data(Qt::DisplayRole).toString().isEmpty())
        return;
    fitPending_ = false;
    fitColumns();
}

void TransactionTableView::saveColumns()
{
    if (restoring_)
        return;
    userLayout_ = true;
    Settings::setTransactionColumns(horizontalHeader()->saveState());
}

void TransactionTableView::showHeaderMenu(const QPoint& position)
{
    QHeaderView* header = horizontalHeader();
    QMenu menu(this);
    for (int visual = 0; visual < header->count(); ++visual) {
        const int column = header->logicalIndex(visual);
        QAction* toggle = menu.addAction(model_->headerData(column, Qt::Horizontal).toString());
        toggle->setCheckable(true);
        toggle->setChecked(!header->isSectionHidden(column));
        // The index names the row: it is never hidden.
        toggle->setEnabled(column != TransactionTableModel::IndexColumn);
        connect(toggle, &QAction::toggled, this, [this, header, column](bool shown) {
            header->setSectionHidden(column, !shown);
            if (shown)
                resizeColumnToContents(column);
            saveColumns();
        });
    }
    menu.addSeparator();
    menu.addAction(tr("&Fit Columns to Content"), this, [this] {
        fitColumns();
        saveColumns();
    });
    menu.addAction(tr("&Reset Columns"), this, &TransactionTableView::resetColumns);
    menu.exec(header->viewport()->mapToGlobal(position));
}

QString TransactionTableView::selectedRowsText(int* copied, int* selected) const
{
    QHeaderView* header = horizontalHeader();
    QList<int> columns;
    for (int visual = 0; visual < header->count(); ++visual)
        if (!header->isSectionHidden(header->logicalIndex(visual)))
            columns << header->logicalIndex(visual);
    QStringList lines, cells;
    for (int column : columns)
        cells << model_->headerData(column, Qt::Horizontal).toString();
    lines << cells.join(QLatin1Char('\t'));
    int rows = 0, count = 0;
    QItemSelection ranges = selectionModel()->selection();
    std::sort(ranges.begin(), ranges.end(), [](const QItemSelectionRange& a, const QItemSelectionRange& b) { return a.top() < b.top(); });
    for (const QItemSelectionRange& range : ranges) {
        count += range.height();
        for (int row = range.top(); row <= range.bottom() && rows < kMaxCopiedRows; ++row, ++rows) {
            cells.clear();
            for (int column : columns)
                cells << model_->index(row, column).data(TransactionTableModel::DisplayNowRole).toString();
            lines << cells.join(QLatin1Char('\t'));
        }
    }
    if (copied)
        *copied = rows;
    if (selected)
        *selected = count;
    return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

QString TransactionTableView::currentValueText() const
{
    const QModelIndex current = currentIndex();
    return current.isValid() ? current.data(TransactionTableModel::DisplayNowRole).toString() : QString();
}

int TransactionTableView::rowToShow() const
{
    const QItemSelectionModel* selection = selectionModel();
    const QModelIndex current = selection->currentIndex();
    if (current.isValid() && selection->isRowSelected(current.row(), QModelIndex()))
        return current.row();
    int row = -1;
    for (const QItemSelectionRange& range : selection->selection())  // ranges: a million selected rows are one
        row = row < 0 ? range.top() : std::min(row, range.top());
    return row;
}

void TransactionTableView::setEmptyText(const QString& text)
{
    emptyState_->setText(text);
    emptyState_->setVisible(!text.isEmpty());
    emptyState_->setGeometry(viewport()->rect().adjusted(12, 12, -12, -12));
}

QString TransactionTableView::emptyText() const { return emptyState_->isVisible() ? emptyState_->text() : QString(); }

void TransactionTableView::resizeEvent(QResizeEvent* event)
{
    QTableView::resizeEvent(event);
    // The text columns share the view: a narrower view (the detail pane opened) refits them,
    // unless the auditor sized the columns.
    if (!userLayout_ && event->size().width() != event->oldSize().width())
        fitColumns();
    emptyState_->setGeometry(viewport()->rect().adjusted(12, 12, -12, -12));
}

}  // namespace zkdv::ui
