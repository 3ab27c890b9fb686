#pragma once
// The filter row over the transaction table (Wireshark's display filter toolbar, in spirit):
// the quick-filter box and the display-filter line, which completes field names and
// comparisons as they are typed and shows at once whether the text compiles (green), does
// not (red, the error and where in the tooltip and the status line) or is empty (neutral).
// The table gets a filter 250 ms after the typing stops, and only one that compiles: a bad
// one leaves the last good one in place.

#include <QWidget>

class QComboBox;
class QCompleter;
class QLabel;
class QLineEdit;
class QStringListModel;
class QTimer;

namespace zkdv::ui {

class DisplayFilterBar : public QWidget {
    Q_OBJECT

public:
    enum class State { Empty, PlainText, Valid, Invalid };

    explicit DisplayFilterBar(QWidget* parent = nullptr);

    QComboBox* quickFilterBox() const { return quick_; }
    QLineEdit* filterEdit() const { return edit_; }
    QCompleter* completer() const { return completer_; }
    QLabel* statusLine() const { return status_; }

    State state() const { return state_; }
    // The error of the text as typed ("" unless state() is Invalid).
    QString problem() const { return problem_; }
    // Ctrl+F: the line edit takes the focus, its text selected.
    void focusFilter();

Q_SIGNALS:
    // The text to filter the table with: 250 ms after typing stopped, when it compiles.
    void filterChanged(const QString& text);
    void quickFilterChanged(int index);
    // 250 ms after typing stopped, when the text does not compile (for the status bar).
    void problemFound(const QString& message);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void check();
    void complete();
    void insertCompletion(const QString& completion);
    void applyDelayed();

    QComboBox* quick_;
    QLineEdit* edit_;
    QLabel* status_;
    QCompleter* completer_;
    QStringListModel* words_;
    QTimer* delay_;
    State state_ = State::Empty;
    QString problem_;
};

}  // namespace zkdv::ui
