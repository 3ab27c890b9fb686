#pragma once
// Versions of what the workstation runs on, for the About box.

#include <QString>

namespace zkdv::ui {

// "Qt 6.4.2, QCustomPlot 2.1.0" for the linked libraries.
QString toolkitVersions();
// Every version an auditor may need to quote: ZKDV, Qt, QCustomPlot, libtorch, SQLite, and
// whether CUDA (and which devices) this build can replay on. Rich text.
QString aboutText();

}  // namespace zkdv::ui
