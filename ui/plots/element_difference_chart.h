#pragma once
// A compared tensor element by element, recorded beside replayed: for a 2-D tensor three
// heatmaps (recorded, replayed, replayed − recorded); otherwise both values over the element
// index above a histogram of the differences.

#include <qcustomplot.h>

#include <cstdint>
#include <vector>

namespace zkdv::ui {

class ElementDifferenceChart : public QCustomPlot {
    Q_OBJECT

public:
    explicit ElementDifferenceChart(QWidget* parent = nullptr);

    // `replayed` empty: the replay's values could not be compared (dtype or shape differ).
    void setTensor(const QString& name, const std::vector<std::int64_t>& shape, const std::vector<double>& recorded,
                   const std::vector<double>& replayed);
    void clear();

    bool showsHeatmap() const { return heatmap_; }
    // The largest |replayed − recorded| shown (NaN pairs left out), 0 when equal.
    double largestDifference() const { return largestDifference_; }
    // The difference map of a 2-D tensor (nullptr otherwise).
    QCPColorMap* differenceMap() const { return differenceMap_; }
    QCPBars* histogram() const { return histogram_; }

    static constexpr int kHistogramBins = 41;

private:
    void reset();
    QCPColorMap* addMap(QCPAxisRect* rect, const QString& title, std::int64_t rows, std::int64_t columns, const std::vector<double>& values,
                        QCPRange range, const QCPColorGradient& gradient);

    QCPTextElement* title_ = nullptr;
    QCPColorMap* differenceMap_ = nullptr;
    QCPBars* histogram_ = nullptr;
    bool heatmap_ = false;
    double largestDifference_ = 0.0;
};

}  // namespace zkdv::ui
