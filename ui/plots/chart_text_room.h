#pragma once
// Room for a chart's text when the chart is narrow (three colour bars side by side in a
// 340-pixel pane): tick labels kept apart, and a check, for the layout tests, that no tick
// label, title or legend runs into another or out of the chart.

#include <QStringList>

class QCPAxis;
class QCustomPlot;

namespace zkdv::ui {

class ChartTextRoom {
public:
    // From now on, after each replot, an axis of `plot` (colour scales included) whose tick
    // labels touch gets fewer ticks, and one that has room again gets them back.
    static void keepTickLabelsApart(QCustomPlot* plot);
    // What of `plot` overlaps or leaves the chart, one "what: why" each: tick labels, text
    // elements (titles) whose text is wider or taller than their place, legends outside the
    // chart. Empty when all has its room. Reads the layout of the last replot.
    static QStringList crowdedText(QCustomPlot* plot);
    // Whether the tick labels of `axis`, as last laid out, overlap one another.
    static bool labelsOverlap(QCPAxis* axis);
};

}  // namespace zkdv::ui
