#pragma once
// Which data point of a graph the mouse means: nearest by key, or nearest on screen.

#include <qcustomplot.h>

namespace zkdv::ui {

class PointPicker {
public:
    // Position in `data` of the point whose key is nearest `key`; -1 when `data` is empty.
    static int nearestByKey(const QCPGraphDataContainer& data, double key);
    // Position in the graph's data of the point nearest `pos` on screen, if one lies within
    // `radius` pixels (points with a NaN value are skipped); -1 otherwise. `distance`
    // receives its distance in pixels.
    static int nearestOnScreen(const QCPGraph& graph, const QPointF& pos, double radius, double* distance = nullptr);
};

}  // namespace zkdv::ui
