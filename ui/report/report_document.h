#pragma once
// The audit report as a document for people: a PDF (A4, text laid out by QTextDocument,
// charts drawn by QCustomPlot as vectors) or one self-contained HTML file (inline CSS,
// charts embedded as PNG data URIs). The workstation's File → Export Report… and
// `zkdv-audit report --format pdf|html` both come here.
//
// Must be called on the thread of a running QApplication (the charts are QCustomPlot
// widgets); headless callers create one on the "offscreen" platform.

#include <string>

#include "zkdv/workflow/report_export.h"

namespace zkdv {
class ProgressSink;
}

namespace zkdv::ui {

// Writes `report` to `path` as `format` ("pdf" or "html"). Returns false with a one-line
// reason in `error` (when not null) for an unknown format, a missing QApplication, the
// wrong thread, or a file that cannot be written.
bool renderReportDocument(const zkdv::ReportData& report, const std::string& format, const std::string& path, std::string* error);

// The renderer above as the core's plug-in for PDF and HTML (zkdv/workflow/report_export.h):
// what writeReport calls on the GUI thread of the workstation and of a headless zkdv-audit.
class ReportDocuments : public ReportDocumentRenderer {
public:
    void write(const ReportData& report, ReportFormat format, const std::string& path) const override;
};

class ReportPdfWriter;
// Writes a PDF prepared on the GUI thread (ReportPdfWriter's constructor draws the charts) on
// any thread, atomically (a temporary file renamed over `path`), with pages reported to
// `progress`, which may cancel (OperationCancelled; nothing is left at `path`).
bool writePdfReport(const ReportPdfWriter& writer, const std::string& path, std::string* error, ProgressSink* progress = nullptr);

}  // namespace zkdv::ui
