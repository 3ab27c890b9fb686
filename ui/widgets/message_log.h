#pragma once
// Every message the workstation showed in its status bar, whole and timestamped, newest last:
// the status bar shows one line for a few seconds, cut at the window's edge; the log keeps
// what was said (Wireshark's expert info, in spirit).

#include <QDockWidget>

class QListWidget;

namespace zkdv::ui {

class MessageLog : public QDockWidget {
    Q_OBJECT

public:
    explicit MessageLog(QWidget* parent = nullptr);

    void append(const QString& message);
    QStringList messages() const;  // the texts, oldest first
    void clear();
    // The selected messages, one per line, to the clipboard.
    void copySelection();

    // Older messages are dropped beyond this many.
    static constexpr int kMaxMessages = 500;

private:
    QListWidget* list_;
};

}  // namespace zkdv::ui
