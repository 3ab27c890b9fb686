#pragma once
// The charts of an audit report (loss with the replayed transactions marked by verdict, and
// each replayed transaction's worst divergence), drawn as vectors onto a PDF page or as PNG
// data URIs for a self-contained HTML file.
//
// The charts are QCustomPlot widgets (never shown): construct and use a ReportCharts only
// on the thread of a running QApplication.

#include <QRectF>
#include <QString>

#include <memory>
#include <vector>

class QCPPainter;
class QCustomPlot;

namespace zkdv {
struct ReportData;
}

namespace zkdv::ui {

class ReportCharts {
public:
    static constexpr int kChartCount = 3;  // loss, worst ULP distance, worst relative L2

    // The charts the report has data for (chart numbers as for `which` below): the loss
    // chart when the report has a run or a loss series, the divergence charts when it has a
    // run; none for a finding report without losses, rather than empty axes.
    static std::vector<int> chartsOf(const ReportData& report);

    // Every chart of chartsOf(report).
    explicit ReportCharts(const ReportData& report);
    // Only chart `which` (0 to kChartCount - 1), as chart 0 of this set.
    ReportCharts(const ReportData& report, int which);
    ~ReportCharts();
    ReportCharts(const ReportCharts&) = delete;
    ReportCharts& operator=(const ReportCharts&) = delete;

    int count() const { return static_cast<int>(charts_.size()); }
    const QString& title(int chart) const { return charts_[static_cast<std::size_t>(chart)].title; }
    // What the chart shows and how to read it, one or two sentences.
    const QString& caption(int chart) const { return charts_[static_cast<std::size_t>(chart)].caption; }

    // Draws chart `chart` into `rect` (painter coordinates) as vectors.
    void draw(int chart, QCPPainter* painter, const QRectF& rect) const;
    // "data:image/png;base64,…" of the chart at width x height logical pixels, rendered at
    // `scale` device pixels per logical pixel.
    QString pngDataUri(int chart, int width, int height, double scale = 2.0) const;

private:
    struct Chart {
        QString title;
        QString caption;
        std::unique_ptr<QCustomPlot> plot;
    };
    void addLossChart(const ReportData& report);
    void addDivergenceChart(const ReportData& report, bool ulp);

    std::vector<Chart> charts_;
};

}  // namespace zkdv::ui
