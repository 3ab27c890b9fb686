#pragma once
// File → Export Report… as background work: the report's data is built from the case on a
// job's thread; JSON and CSV are written there too. HTML is drawn on the GUI thread (its charts
// are widgets); a PDF's charts are drawn there one per turn of the event loop, then its pages
// are laid out and painted in a second job, with progress and cancel.

#include <QString>

#include "zkdv/report/audit_report.h"
#include "zkdv/workflow/report_export.h"

namespace zkdv::ui {

class JobRunner;

// Starts the export on `runner` (false when it is busy); `documents` draws PDF and HTML and
// must outlive the export. The runner's finished says how it went, once the file is written.
bool startReportExport(JobRunner& runner, const ReportDocumentRenderer& documents, const QString& casePath, const ReportOptions& options,
                       ReportFormat format, const QString& path);

}  // namespace zkdv::ui
