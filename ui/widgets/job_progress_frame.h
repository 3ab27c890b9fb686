#pragma once
// The status-bar frame of a running background job: what it does, how far, how long is
// left, and a button to end it early, named after what that does (Cancel or Stop).

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
    // The button's text while following a job: its interruptLabel().
    QString buttonText() const;
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
