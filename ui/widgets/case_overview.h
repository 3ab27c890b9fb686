#pragma once
// The case at a glance: each tape with its seal status, program digest (present? matching?),
// model layout, optimizer and options, sampling policy and snapshot interval.

#include <QTreeWidget>

namespace zkdv::ui {

class CaseOverview : public QTreeWidget {
    Q_OBJECT
public:
    explicit CaseOverview(QWidget* parent = nullptr);

    // Re-reads the case (read-only); an empty path clears. Returns false and leaves the view
    // empty when the case cannot be read (the reason goes to problem()).
    bool showCase(const QString& casePath);
    // The tape the user picked (the first one by default); 0 when the case has none.
    qint64 currentTape() const { return currentTape_; }
    int tapeCount() const { return topLevelItemCount(); }

Q_SIGNALS:
    void tapeChosen(qint64 tapeId);
    void problem(const QString& message);

private:
    qint64 currentTape_ = 0;
};

}  // namespace zkdv::ui
