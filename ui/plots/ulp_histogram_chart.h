#pragma once
// The log2 ULP histogram (65 bins: distance 0, then [2^(b-1), 2^b)) of the selected
// transaction's comparisons, or of a whole run, as bars with a log count axis. A second run's
// histogram of the same transaction (or whole run) may stand beside it, bin by bin, the legend
// then naming both runs.

#include <qcustomplot.h>

#include "zkdv/audit/divergence.h"

namespace zkdv::ui {

class UlpHistogramChart : public QCustomPlot {
    Q_OBJECT

public:
    explicit UlpHistogramChart(QWidget* parent = nullptr);

    // `caption` says whose histogram it is ("transaction 17", "run 3").
    void setHistogram(const UlpHistogram& histogram, const QString& caption);
    // The second run's histogram beside the first's, named in the legend with the first
    // ("Run #3 (cpu)" beside `shownName`). An empty `name`: none (the legend goes).
    void setComparison(const UlpHistogram& histogram, const QString& name, const QString& shownName);
    void clearComparison() { setComparison({}, QString(), QString()); }
    void clear();

    quint64 total() const { return total_; }
    bool hasComparison() const { return !comparisonName_.isEmpty(); }
    quint64 comparisonTotal() const { return comparisonTotal_; }
    QCPBars* bars() const { return bars_; }
    QCPBars* comparisonBars() const { return comparisonBars_; }
    const UlpHistogram& histogram() const { return histogram_; }
    // "0", "[1, 2)", "[2^10, 2^11)" for bin `bin`.
    static QString binLabel(int bin);

protected:
    void mouseMoveEvent(QMouseEvent* event) override;

private:
    void rescale();
    void nameBars();

    QCPTextElement* title_ = nullptr;
    QCPBars* bars_ = nullptr;
    QCPBars* comparisonBars_ = nullptr;
    QCPBarsGroup* group_ = nullptr;
    UlpHistogram histogram_{};
    UlpHistogram comparison_{};
    quint64 total_ = 0;
    quint64 comparisonTotal_ = 0;
    QString comparisonName_;
    QString shownName_;
};

}  // namespace zkdv::ui
