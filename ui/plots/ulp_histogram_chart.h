#pragma once
// The log2 ULP histogram (65 bins: distance 0, then [2^(b-1), 2^b)) of the selected
// transaction's comparisons, or of a whole run, as bars with a log count axis.

#include <qcustomplot.h>

#include "zkdv/audit/divergence.h"

namespace zkdv::ui {

class UlpHistogramChart : public QCustomPlot {
    Q_OBJECT

public:
    explicit UlpHistogramChart(QWidget* parent = nullptr);

    // `caption` says whose histogram it is ("transaction 17", "run 3").
    void setHistogram(const UlpHistogram& histogram, const QString& caption);
    void clear();

    quint64 total() const { return total_; }
    const UlpHistogram& histogram() const { return histogram_; }
    // "0", "[1, 2)", "[2^10, 2^11)" for bin `bin`.
    static QString binLabel(int bin);

protected:
    void mouseMoveEvent(QMouseEvent* event) override;

private:
    QCPTextElement* title_ = nullptr;
    QCPBars* bars_ = nullptr;
    UlpHistogram histogram_{};
    quint64 total_ = 0;
};

}  // namespace zkdv::ui
