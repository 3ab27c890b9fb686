#pragma once
// Writing an audit report to a file, the one format dispatch of the CLI and the workstation:
// JSON and CSV (for machines) are written here; PDF and HTML (for people) by a document
// renderer that a program with a toolkit plugs in (the workstation's Qt renderer,
// ui/report/report_document.h), so the core stays toolkit-free.

#include <optional>
#include <string>
#include <string_view>

#include "zkdv/report/audit_report.h"

namespace zkdv {

enum class ReportFormat { Json, Csv, Pdf, Html };

// "json", "csv", "pdf", "html".
std::string_view reportFormatName(ReportFormat format);
// From a name in any case ("htm" too); nullopt for anything else.
std::optional<ReportFormat> reportFormatFromName(std::string_view name);
// From the extension of `path` (reportFormatOf, zkdv/report/report_file.h).
std::optional<ReportFormat> reportFormatOfPath(const std::string& path);
// PDF and HTML: documents a renderer draws.
inline bool isDocumentFormat(ReportFormat format) { return format == ReportFormat::Pdf || format == ReportFormat::Html; }

// Draws a report as a document for people. Implementations write atomically (a reader never
// sees half a report) and throw Error naming the file when they cannot.
class ReportDocumentRenderer {
public:
    virtual ~ReportDocumentRenderer() = default;
    virtual void write(const ReportData& report, ReportFormat format, const std::string& path) const = 0;
};

// Thrown for a document format when no renderer is plugged in.
class ReportFormatUnavailable : public Error {
public:
    using Error::Error;
};

// Writes `report` to `path` as `format`: JSON and CSV directly, PDF and HTML through
// `documents` (ReportFormatUnavailable when it is null). Throws IoError or the renderer's
// Error when the file cannot be written; an existing file is then left as it was.
void writeReport(const ReportData& report, ReportFormat format, const std::string& path, const ReportDocumentRenderer* documents);

}  // namespace zkdv
