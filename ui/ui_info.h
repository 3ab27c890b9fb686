#pragma once
// Versions of what the workstation runs on, for the About box.

#include <QString>

namespace zkdv::ui {

class ReplayWorkerProbe;

// "Qt 6.4.2, QCustomPlot 2.1.0" for the linked libraries.
QString toolkitVersions();
// Every version an auditor may need to quote: ZKDV, Qt, QCustomPlot, SQLite, and what the
// replay worker said of its libtorch and CUDA devices (the workstation itself loads no
// libtorch). Rich text.
QString aboutText(const ReplayWorkerProbe& worker);

}  // namespace zkdv::ui
