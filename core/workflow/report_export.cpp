#include "zkdv/workflow/report_export.h"

#include "zkdv/report/report_file.h"

namespace zkdv {

std::string_view reportFormatName(ReportFormat format)
{
    switch (format) {
    case ReportFormat::Json: return "json";
    case ReportFormat::Csv: return "csv";
    case ReportFormat::Pdf: return "pdf";
    case ReportFormat::Html: return "html";
    }
    return "json";
}

std::optional<ReportFormat> reportFormatFromName(std::string_view name)
{
    std::string lower(name);
    for (char& c : lower)
        c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (lower == "htm")
        return ReportFormat::Html;
    for (ReportFormat format : {ReportFormat::Json, ReportFormat::Csv, ReportFormat::Pdf, ReportFormat::Html})
        if (reportFormatName(format) == lower)
            return format;
    return std::nullopt;
}

std::optional<ReportFormat> reportFormatOfPath(const std::string& path) { return reportFormatFromName(reportFormatOf(path)); }

void writeReport(const ReportData& report, ReportFormat format, const std::string& path, const ReportDocumentRenderer* documents)
{
    switch (format) {
    case ReportFormat::Json: writeReportFile(path, renderReportJson(report)); return;
    case ReportFormat::Csv: writeReportFile(path, renderReportCsv(report)); return;
    case ReportFormat::Pdf:
    case ReportFormat::Html:
        if (!documents)
            throw ReportFormatUnavailable(std::string(reportFormatName(format)) +
                                          " reports need the workstation's document renderer (the Qt report library); this program "
                                          "writes json and csv");
        documents->write(report, format, path);
        return;
    }
}

}  // namespace zkdv
