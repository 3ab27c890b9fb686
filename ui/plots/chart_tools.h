#pragma once
// What every workstation chart lets its user do besides looking: zoom and pan along the
// transactions (x) while the values (y) follow the data in view, never past the data; reset
// the zoom (double-click the background, Home, the context menu); export the chart as PNG (at a
// chosen size, titled, with a footer naming its data's source) or SVG and its data as CSV.
// Installed once per chart by ChartStyle::applyInteractions.

#include <QList>
#include <QObject>
#include <QSize>
#include <QString>

class QAction;
class QCPAxis;
class QCPAxisRect;
class QCPRange;
class QCustomPlot;
class QImage;
class QMenu;

namespace zkdv::ui {

// An exported image of a chart: its size, a title above the chart and footer lines below it.
struct ChartImageOptions {
    QSize size;      // in pixels, each side within ChartTools::kMinImageSide..kMaxImageSide
    QString title;   // empty: no title band
    QString footer;  // one or more lines ('\n'); empty: no footer band
};

class ChartTools : public QObject {
    Q_OBJECT

public:
    // The plot's tools, made on the first call; the plot owns them.
    static ChartTools* of(QCustomPlot* plot);

    // Room left beside the first and last key when the whole data is in view, so that the
    // outermost markers (up to this radius) are drawn whole, not cut by the plot's edge.
    static constexpr int kEdgeMarginPixels = 6;
    // The sides an exported image may have, in pixels.
    static constexpr int kMinImageSide = 200;
    static constexpr int kMaxImageSide = 8000;

    // Adds a chart's own action (a scale toggle) to its context menu and shortcuts.
    void addChartAction(QAction* action);
    QList<QAction*> actions() const;

    // Every x axis back to the data's extent, every y axis to the data in view.
    void resetZoom();
    // Every y axis to the data in view (after a scale change), the x axes as they are.
    void fitValues();
    // Zooms the x axis of `rect` by `factor` (< 1 zooms in) around the key `center`, as the
    // wheel does, then keeps it within the data and lets y follow.
    void zoomX(QCPAxisRect* rect, double factor, double center);

    // What an exported image says of the chart's data: the title it proposes and the footer
    // (the tape, the run or runs, the case). The chart panel sets them; by default the title
    // is the chart's name and there is no footer.
    void setCaption(const QString& title, const QString& footer);
    QString captionTitle() const;
    QString captionFooter() const { return footer_; }
    // What the PNG export proposes: the chart's current size and its caption.
    ChartImageOptions imageOptions() const;

    // The chart as the window shows it, at its current size (PNG at the screen's pixel ratio).
    bool exportPng(const QString& path, QString* error) const;
    // The chart drawn into an image of exactly `options.size` pixels under the title and over
    // the footer; the chart on screen is left as it was. A null image, and `error` saying why,
    // when a side is out of bounds or the bands leave the chart no room.
    QImage renderImage(const ChartImageOptions& options, QString* error) const;
    bool exportPng(const QString& path, const ChartImageOptions& options, QString* error) const;
    bool exportSvg(const QString& path, QString* error) const;
    // One row per data point of every series that has data: chart,series,x,y.
    QString csv() const;
    bool exportCsv(const QString& path, QString* error) const;

    // The menu the chart shows on right-click (also for tests).
    QMenu* contextMenu();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    explicit ChartTools(QCustomPlot* plot);

    void exportDialog(const QString& format);
    void keepInData(QCPAxisRect* rect);
    void followData(QCPAxisRect* rect);
    bool dataKeyRange(QCPAxisRect* rect, QCPRange* range) const;
    QString chartName() const;

    QCustomPlot* plot_;
    QAction* resetAction_ = nullptr;
    QList<QAction*> exportActions_;
    QList<QAction*> chartActions_;
    QMenu* menu_ = nullptr;
    QString title_;
    QString footer_;
    bool dragging_ = false;
    bool wholeData_ = false;  // the view is resetZoom()'s: kept so through resizes
};

}  // namespace zkdv::ui
