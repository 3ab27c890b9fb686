#include "report/report_document.h"

#include <QApplication>
#include <QFileInfo>
#include <QThread>

#include <cstdio>
#include <exception>

#include "report/report_charts.h"
#include "report/report_html.h"
#include "report/report_pdf_writer.h"
#include "zkdv/report/audit_report.h"
#include "zkdv/report/report_file.h"

namespace zkdv::ui {

namespace {

bool fail(std::string* error, const QString& message)
{
    if (error)
        *error = message.toStdString();
    return false;
}

void writeHtml(const ReportData& report, const QString& path)
{
    const ReportHtml html(report, ReportHtml::Target::File);
    const ReportCharts charts(report);
    const QByteArray bytes = html.document(html.summary() + ReportHtml::charts(charts) + html.transactions()).toUtf8();
    writeReportFile(path.toStdString(), bytes.toStdString());  // throws IoError naming the file
}

}  // namespace

bool writePdfReport(const ReportPdfWriter& writer, const std::string& path, std::string* error, ProgressSink* progress)
{
    // QPdfWriter writes where it is told: to the temporary file, renamed over `path` once whole.
    const std::string temporary = reportTemporaryPath(path);
    QString problem;
    bool ok = false;
    try {
        ok = writer.write(QString::fromStdString(temporary), &problem, progress);
    } catch (...) {
        std::remove(temporary.c_str());
        throw;
    }
    if (!ok) {
        std::remove(temporary.c_str());
        return fail(error, problem);
    }
    publishReportFile(path);
    return true;
}

bool renderReportDocument(const zkdv::ReportData& report, const std::string& format, const std::string& path, std::string* error)
{
    if (format != "pdf" && format != "html")
        return fail(error, QObject::tr("unknown report document format '%1' (pdf or html)").arg(QString::fromStdString(format)));
    if (!qobject_cast<QApplication*>(QCoreApplication::instance()))
        return fail(error, QObject::tr("a %1 report needs a QApplication (its charts are widgets)").arg(QString::fromStdString(format)));
    if (QThread::currentThread() != QCoreApplication::instance()->thread())
        return fail(error, QObject::tr("a %1 report must be rendered on the GUI thread").arg(QString::fromStdString(format)));
    const QString target = QString::fromStdString(path);
    try {
        if (format == "html") {
            writeHtml(report, target);
            return true;
        }
        ReportPdfWriter writer(report);
        writer.drawAllCharts();
        return writePdfReport(writer, path, error);
    } catch (const std::exception& exception) {
        return fail(error, QObject::tr("%1: %2").arg(target, QString::fromStdString(exception.what())));
    }
}

void ReportDocuments::write(const ReportData& report, ReportFormat format, const std::string& path) const
{
    std::string error;
    if (!renderReportDocument(report, std::string(reportFormatName(format)), path, &error))
        throw Error(error);
}

}  // namespace zkdv::ui
