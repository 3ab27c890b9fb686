#pragma once
// PDF and HTML reports from the command line: the workstation's renderer (zkdv-ui-report) on
// a headless QApplication. Compiled only when zkdv-audit is built with the Qt report library
// (ZKDV_WITH_REPORT_DOCUMENTS).

#include "zkdv/workflow/report_export.h"

namespace zkdv::cli {

// The workstation's document renderer, starting a QApplication on the offscreen platform
// (unless QT_QPA_PLATFORM says otherwise) for the charts when none runs.
class HeadlessReportDocuments : public ReportDocumentRenderer {
public:
    void write(const ReportData& report, ReportFormat format, const std::string& path) const override;
};

}  // namespace zkdv::cli
