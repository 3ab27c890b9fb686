#pragma once
// "Replay top-q…": q, the number of largest recorded updates of each parameter to replay,
// and, as q changes, how many transactions that selects on the tape (counted off the GUI
// thread), so that the auditor knows the replay's size before starting it.

#include <QDialog>

class QSpinBox;

namespace zkdv::ui {

class TopQCountLabel;

class TopQDialog : public QDialog {
    Q_OBJECT
public:
    TopQDialog(const QString& casePath, qint64 tapeId, int q, QWidget* parent = nullptr);

    int q() const;
    QString selectionSpec() const;  // "topq:10"

private:
    QSpinBox* q_;
    TopQCountLabel* count_;
};

}  // namespace zkdv::ui
