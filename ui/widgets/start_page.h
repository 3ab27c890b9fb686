#pragma once
// What the workstation shows when no case is open: the recent cases and tapes, one click (or
// Enter) away, and the ways to start (new case, open, drop files).

#include <QWidget>

class QListWidget;

namespace zkdv::ui {

class StartPage : public QWidget {
    Q_OBJECT

public:
    explicit StartPage(QWidget* parent = nullptr);

    // Re-reads the recent files (Settings) into the list.
    void refresh();
    QListWidget* recentList() const { return recent_; }

Q_SIGNALS:
    void openRequested(const QString& path);
    void newCaseRequested();
    void openCaseRequested();

private:
    QListWidget* recent_;
};

}  // namespace zkdv::ui
