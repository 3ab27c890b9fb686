#pragma once
// The table of a tape's transactions as the auditor reads it: the verdict, worst divergence
// and note first, columns fitted to what they hold, columns shown, hidden and ordered from
// the header's menu (kept in the settings), a line over an empty table saying why, and
// Copy of the rows as shown.

#include <QTableView>

class QLabel;

namespace zkdv::ui {

class TransactionTableModel;

class TransactionTableView : public QTableView {
    Q_OBJECT

public:
    explicit TransactionTableView(TransactionTableModel* model, QWidget* parent = nullptr);

    TransactionTableModel* transactionModel() const { return model_; }

    // The selected rows as shown (visible columns in their order, header line first),
    // tab-separated as a spreadsheet pastes them, at most kMaxCopiedRows rows; `copied` and
    // `selected` count the rows.
    QString selectedRowsText(int* copied = nullptr, int* selected = nullptr) const;
    // The current cell's whole text ("" without one).
    QString currentValueText() const;
    static constexpr int kMaxCopiedRows = 100000;

    // Over the rows when there are none ("" hides it).
    void setEmptyText(const QString& text);
    QString emptyText() const;

    // Every column that is not hidden to the width of its header and of the rows in view, a
    // text column at most its widthLimit(); runs by itself when rows arrive.
    void fitColumns();
    // The width `column` needs for its header and the rows in view.
    int neededWidth(int column) const;
    // How wide fitting makes `column` at most: the verdict, worst divergence and note share
    // the view (cut text is whole in the tooltip and the detail pane), so that all three stay
    // in view beside the index; INT_MAX for the number columns.
    int widthLimit(int column) const;
    // The default columns, their order and widths; forgets the saved layout.
    void resetColumns();
    // The row whose transaction the other panes show: the current row when it is selected,
    // else the selected row nearest the top; -1 when none is selected.
    int rowToShow() const;

Q_SIGNALS:
    void exportRequested();  // the context menu's Export Table as CSV

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void showHeaderMenu(const QPoint& position);
    void applyDefaultColumns();
    // The auditor changed the columns: kept in the settings, and no longer fitted by itself.
    void saveColumns();
    void fitWhenRowsArrive();

    TransactionTableModel* model_;
    QLabel* emptyState_;
    bool fitPending_ = true;   // fit once the next rows' cells arrive
    bool restoring_ = false;   // sections changing because of this class, not the auditor
    bool userLayout_ = false;  // the auditor moved or sized columns (or a saved layout was restored)
};

}  // namespace zkdv::ui
