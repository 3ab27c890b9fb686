#include "plots/point_picker.h"

#include <cmath>
#include <limits>

namespace zkdv::ui {

int PointPicker::nearestByKey(const QCPGraphDataContainer& data, double key)
{
    if (data.isEmpty())
        return -1;
    // findBegin: the last point with a key at or below `key` (or the first point).
    auto below = data.findBegin(key, true);
    auto best = below;
    auto above = below + 1;
    if (above != data.constEnd() && std::fabs(above->key - key) < std::fabs(below->key - key))
        best = above;
    return static_cast<int>(best - data.constBegin());
}

int PointPicker::nearestOnScreen(const QCPGraph& graph, const QPointF& pos, double radius, double* distance)
{
    const QCPGraphDataContainer& data = *graph.data();
    QCPAxis* keyAxis = graph.keyAxis();
    QCPAxis* valueAxis = graph.valueAxis();
    if (data.isEmpty() || !keyAxis || !valueAxis)
        return -1;
    double from = keyAxis->pixelToCoord(pos.x() - radius);
    double to = keyAxis->pixelToCoord(pos.x() + radius);
    if (from > to)
        std::swap(from, to);
    int best = -1;
    double bestSquared = radius * radius;
    for (auto it = data.findBegin(from, false); it != data.constEnd() && it->key <= to; ++it) {
        if (std::isnan(it->value))
            continue;
        const double dx = keyAxis->coordToPixel(it->key) - pos.x();
        const double dy = valueAxis->coordToPixel(it->value) - pos.y();
        const double squared = dx * dx + dy * dy;
        if (squared <= bestSquared) {
            bestSquared = squared;
            best = static_cast<int>(it - data.constBegin());
        }
    }
    if (distance)
        *distance = best >= 0 ? std::sqrt(bestSquared) : std::numeric_limits<double>::infinity();
    return best;
}

}  // namespace zkdv::ui
