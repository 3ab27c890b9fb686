#pragma once
// Versions of the toolkits the workstation runs on, for the About box.

#include <QString>

namespace zkdv::ui {

// "Qt 6.4.2, QCustomPlot 2.1.0" for the linked libraries.
QString toolkitVersions();

}  // namespace zkdv::ui
