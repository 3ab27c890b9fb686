#pragma once
// Lays an audit report out on A4 PDF pages: the summary (verdict, headline and warnings at
// the top of page one), a page of vector charts, then the per-transaction table, with a
// footer naming the tape and the page on every page.

#include <QString>

namespace zkdv {
struct ReportData;
}

namespace zkdv::ui {

class ReportPdfWriter {
public:
    explicit ReportPdfWriter(const ReportData& report) : report_(report) {}
    // Writes the PDF; false with `error` set when the file cannot be written. Needs a
    // QApplication on this thread (the charts).
    bool write(const QString& path, QString* error) const;

private:
    const ReportData& report_;
};

}  // namespace zkdv::ui
