#pragma once
// What "Explain Divergence…" found (the explanation zkdv-audit explain prints): the sides
// and their verdicts, the first operator whose outputs differ beyond rounding with the sizes
// of the difference, and the table of the step's calls up to and a few past it. It shows a
// finished explanation; the transaction detail pane puts it in a window of its own.

#include <QWidget>

class QLabel;
class QTableWidget;

namespace zkdv {
struct DivergenceExplanation;
}

namespace zkdv::ui {

class DivergenceExplanationView : public QWidget {
    Q_OBJECT
public:
    DivergenceExplanationView(const DivergenceExplanation& explanation, QWidget* parent = nullptr);

    QLabel* summary() const { return summary_; }
    QTableWidget* table() const { return table_; }
    int namedRow() const { return namedRow_; }  // the table's row of the named call, -1 when none

private:
    QLabel* summary_;
    QTableWidget* table_;
    int namedRow_ = -1;
};

}  // namespace zkdv::ui
