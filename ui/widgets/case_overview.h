#pragma once
// The case at a glance: each tape with its seal status, program digest (present? matching?),
// signer, its links to the world as last checked (dataset, starting checkpoint, final model),
// model layout, optimizer and options, sampling policy and snapshot interval.

#include <QSet>
#include <QTreeView>

class QStandardItem;
class QStandardItemModel;

namespace zkdv::ui {

class CaseOverview : public QTreeView {
    Q_OBJECT
public:
    explicit CaseOverview(QWidget* parent = nullptr);

    // Re-reads the case (read-only); an empty path clears. Returns false and leaves the view
    // empty when the case cannot be read (the reason goes to problem()).
    bool showCase(const QString& casePath);
    // The tape the user picked (the first one by default); 0 when the case has none.
    qint64 currentTape() const { return currentTape_; }
    // Makes `tapeId` the current tape again without telling tapeChosen (a choice taken back).
    void chooseTape(qint64 tapeId);
    int tapeCount() const;
    QStandardItemModel* overviewModel() const { return model_; }
    // The selected rows' values as Copy Value (Ctrl+C) puts them on the clipboard: the value
    // itself (a digest without the words around it); whole rows (key, tab, shown value) for
    // Copy Rows (Ctrl+Shift+C).
    QString copyText(bool wholeRows) const;

Q_SIGNALS:
    void tapeChosen(qint64 tapeId);
    void problem(const QString& message);

private:
    QStandardItemModel* model_;
    qint64 currentTape_ = 0;
    QString shownCase_;
    QSet<qint64> knownTapes_;  // the tapes of the tree before it was built again
};

}  // namespace zkdv::ui
