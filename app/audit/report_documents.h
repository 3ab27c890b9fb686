#pragma once
// PDF and HTML reports from the command line: the workstation's renderer (zkdv-ui) on a
// headless QApplication. Compiled only when zkdv-audit is built with the Qt report library
// (ZKDV_WITH_REPORT_DOCUMENTS).

#include <string>

namespace zkdv {
struct ReportData;
}

namespace zkdv::cli {

// Writes `report` as `format` ("pdf" or "html") to `path`, starting a QApplication on the
// offscreen platform (unless QT_QPA_PLATFORM says otherwise) for the charts. Throws
// UsageError when the file cannot be written.
void writeReportDocument(const ReportData& report, const std::string& format, const std::string& path);

}  // namespace zkdv::cli
