#pragma once
// The optimizer's state after the selected transaction (at the next snapshot), slot by slot:
// grouped bars of the max ULP distance (log) per tensor, one bar per slot (exp_avg, ...).

#include <optional>
#include <string>
#include <vector>

#include <qcustomplot.h>

#include "zkdv/audit/replay_outcome.h"

namespace zkdv::ui {

class SlotDivergenceChart : public QCustomPlot {
    Q_OBJECT

public:
    explicit SlotDivergenceChart(QWidget* parent = nullptr);

    // Keeps the comparisons of optimizer-state slots ("state/<slot>"), ignores the rest.
    void setComparisons(std::optional<quint64> index, const std::vector<TensorComparison>& comparisons);
    void clear() { setComparisons(std::nullopt, {}); }

    int barCount() const;
    QStringList slotNames() const;

protected:
    void mouseMoveEvent(QMouseEvent* event) override;

private:
    QCPTextElement* title_ = nullptr;
    QCPBarsGroup* group_ = nullptr;
    QVector<QCPBars*> bars_;                // one per slot
    std::vector<std::string> tensors_;      // x positions
    std::vector<TensorComparison> states_;  // the state slots' comparisons
};

}  // namespace zkdv::ui
