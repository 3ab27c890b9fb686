#pragma once
// How every workstation chart draws verdicts and values a log axis cannot show.

#include <QColor>
#include <QString>

#include "zkdv/audit/replay_outcome.h"
#include "zkdv/audit/verdict.h"

class QCPAxis;
class QCPAxisRect;
class QCPLegend;
class QCustomPlot;
class QCPTextElement;

namespace zkdv::ui {

class ChartStyle {
public:
    // A log axis has no 0: a divergence of exactly 0 (bitwise equal) is drawn at the axis
    // floor, below every real value, and the tooltips give the true value.
    static constexpr double kUlpFloor = 0.5;          // ULP distances are whole numbers
    static constexpr double kRelativeL2Floor = 1e-20;  // below any float64 relative error of note
    static constexpr double kCountFloor = 0.5;        // histogram counts
    static double onLogAxis(double value, double floor) { return value > floor ? value : floor; }

    // Log scale with powers-of-ten ticks.
    static void makeLogAxis(QCPAxis* axis);
    // The interactions every chart shares: drag to pan and wheel to zoom along x, select
    // plottables, and the ChartTools (reset zoom, export).
    static void applyInteractions(QCustomPlot* plot);
    // The chart's frame in the desktop's colours (dark mode included): background, axes,
    // ticks, grid, labels, legends, titles and the selection cursors (items whose
    // "zkdvCursor" property is set). Series keep their colours; verdicts keep theirs.
    static void applyDesktopPalette(QCustomPlot* plot);
    // Moves `legend` out of the plot area into a column at the right of `rect`, so that it
    // never covers data; entries fill it top to bottom and wrap into a further column after
    // `rowsPerColumn`, so that none is cut off.
    static void placeLegendBeside(QCustomPlot* plot, QCPLegend* legend, QCPAxisRect* rect, int rowsPerColumn = 5);
    // Bars of max ULP distances over named categories (log value axis, rotated text ticks,
    // a title row); returns the title.
    static QCPTextElement* setUpUlpBarChart(QCustomPlot* plot);
    // "42", "1.5e+06", "0 (bitwise equal)" for a divergence value.
    static QString formatValue(double value);
    // Every metric of one comparison, one per line, for a tooltip.
    static QString describeComparison(const TensorComparison& comparison);
};

}  // namespace zkdv::ui
