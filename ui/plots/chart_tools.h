#pragma once
// What every workstation chart lets its user do besides looking: zoom and pan along the
// transactions (x) while the values (y) follow the data in view, never past the data; reset
// the zoom (double-click the background, Home, the context menu); export the chart as PNG or
// SVG and its data as CSV. Installed once per chart by ChartStyle::applyInteractions.

#include <QList>
#include <QObject>
#include <QString>

class QAction;
class QCPAxis;
class QCPAxisRect;
class QCPRange;
class QCustomPlot;
class QMenu;

namespace zkdv::ui {

class ChartTools : public QObject {
    Q_OBJECT

public:
    // The plot's tools, made on the first call; the plot owns them.
    static ChartTools* of(QCustomPlot* plot);

    // Room left beside the first and last key when the whole data is in view, so that the
    // outermost markers (up to this radius) are drawn whole, not cut by the plot's edge.
    static constexpr int kEdgeMarginPixels = 6;

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

    // The chart as the window shows it, at its current size (PNG at the screen's pixel ratio).
    bool exportPng(const QString& path, QString* error) const;
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
    bool dragging_ = false;
    bool wholeData_ = false;  // the view is resetZoom()'s: kept so through resizes
};

}  // namespace zkdv::ui
