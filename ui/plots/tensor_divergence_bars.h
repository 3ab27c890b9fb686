#pragma once
// Every comparison the replay made of the selected transaction, one bar per tensor and slot:
// its max ULP distance (log), colored by the comparison's verdict.

#include <array>
#include <optional>
#include <vector>

#include <qcustomplot.h>

#include "zkdv/audit/replay_outcome.h"

namespace zkdv::ui {

class TensorDivergenceBars : public QCustomPlot {
    Q_OBJECT

public:
    explicit TensorDivergenceBars(QWidget* parent = nullptr);

    // `index`: the transaction the comparisons belong to (nullopt: none selected).
    void setComparisons(std::optional<quint64> index, const std::vector<TensorComparison>& comparisons);
    void clear() { setComparisons(std::nullopt, {}); }

    int barCount() const;

protected:
    void mouseMoveEvent(QMouseEvent* event) override;

private:
    QCPTextElement* title_ = nullptr;
    std::array<QCPBars*, 4> bars_{};  // by verdict
    std::vector<TensorComparison> comparisons_;
};

}  // namespace zkdv::ui
