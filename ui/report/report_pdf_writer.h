#pragma once
// Lays an audit report out on A4 PDF pages: the summary (verdict, headline and warnings at
// the top of page one), a page of vector charts, then the per-transaction table, with a
// footer naming the tape and the page on every page.
//
// Built in steps so that the window never waits long: drawNextChart() draws one chart
// (QCustomPlot widgets: the GUI thread) into a recorded vector picture; once all are drawn,
// write() writes the text, lays it out and paints every page on any thread.

#include <QPicture>
#include <QString>

#include <memory>
#include <vector>

namespace zkdv {
struct ReportData;
class ProgressSink;
}

namespace zkdv::ui {

class ReportPdfWriter {
public:
    // Draws no chart yet.
    explicit ReportPdfWriter(const ReportData& report);
    // GUI thread: draws the next chart; false once every chart is drawn.
    bool drawNextChart();
    void drawAllCharts()
    {
        while (drawNextChart()) {
        }
    }
    // Writes the PDF (every chart drawn first); false with `error` set when the file cannot
    // be written or a chart was not drawn. `progress`
    // hears pages painted of the total and may cancel between pages (OperationCancelled).
    bool write(const QString& path, QString* error, ProgressSink* progress = nullptr) const;

private:
    struct ChartPage {
        QString title;
        QString caption;
        QPicture picture;
    };

    std::shared_ptr<const ReportData> report_;  // a copy: write() may outlive the caller's
    std::vector<int> chartKinds_;  // ReportCharts::chartsOf(report)
    std::vector<ChartPage> charts_;
};

}  // namespace zkdv::ui
