#pragma once
// The replay runs of the shown tape, newest first, under an "All runs" row: the run chosen
// here drives the transaction table, the charts and the report.

#include <QTreeWidget>

namespace zkdv::ui {

class RunList : public QTreeWidget {
    Q_OBJECT
public:
    enum Column { RunColumn, StatusColumn, VerdictsColumn, SelectionColumn, SeedColumn, DeviceColumn, StartedColumn, ColumnCount };

    explicit RunList(QWidget* parent = nullptr);

    // Reads the runs of `tapeId` (read-only); an empty path or tape 0 clears. The chosen run
    // stays chosen while it exists; otherwise "All runs" is.
    void showRuns(const QString& casePath, qint64 tapeId);
    void refresh() { showRuns(casePath_, tapeId_); }
    // TransactionTable::kEveryRun or a run id.
    qint64 chosenRun() const { return chosen_; }
    void chooseRun(qint64 runId);
    int runCount() const;  // rows besides "All runs"

Q_SIGNALS:
    void runChosen(qint64 runId);
    void problem(const QString& message);

private:
    void selectChosen();

    QString casePath_;
    qint64 tapeId_ = 0;
    qint64 chosen_;
    bool filling_ = false;
};

}  // namespace zkdv::ui
