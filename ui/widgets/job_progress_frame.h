#pragma once
// The status-bar frame of a running background job: what it does, how far, how long is
// left, and a button to cancel it.

#include <QWidget>

class QLabel;
class QProgressBar;
class QToolButton;

namespace zkdv::ui {

class BackgroundJob;

class JobProgressFrame : public QWidget {
    Q_OBJECT
public:
    explicit JobProgressFrame(QWidget* parent = nullptr);
    // Follows `job` until it finishes, then hides; nullptr hides at once.
    void follow(BackgroundJob* job);

private:
    void update(quint64 done, quint64 total, const QString& phase);

    QLabel* label_;
    QProgressBar* bar_;
    QToolButton* cancel_;
    BackgroundJob* job_ = nullptr;
};

}  // namespace zkdv::ui
