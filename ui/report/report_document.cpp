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

// QPdfWriter writes where it is told: to the temporary file, renamed over `path` once whole.
bool writePdf(const ReportData& report, const QString& path, QString* problem)
{
    if (!ReportPdfWriter(report).write(QString::fromStdString(reportTemporaryPath(path.toStdString())), problem)) {
        std::remove(reportTemporaryPath(path.toStdString()).c_str());
        return false;
    }
    publishReportFile(path.toStdString());
    return true;
}

}  // namespace

bool renderReportDocument(const zkdv::ReportData& report, const std::string& format, const std::string& path, std::string* error)
{
    if (format != "pdf" && format != "html")
        return fail(error, QObject::tr("unknown report document format '%1' (pdf or html)").arg(QString::fromStdString(format)));
    if (!qobject_cast<QApplication*>(QCoreApplication::instance()))
        return fail(error, QObject::tr("a %1 report needs a QApplication (its charts are widgets)").arg(QString::fromStdString(format)));
    if (QThread::currentThread() != QCoreApplication::instance()->thread())
        return fail(error, QObject::tr("a %1 report must be rendered on the GUI thread").arg(QString::fromStdString(format)));
    const QString target = QString::fromStdString(path);
    QString problem;
    try {
        if (format == "html") {
            writeHtml(report, target);
            return true;
        }
        const bool ok = writePdf(report, target, &problem);
        return ok ? true : fail(error, problem);
    } catch (const std::exception& exception) {
        return fail(error, QObject::tr("%1: %2").arg(target, QString::fromStdString(exception.what())));
    }
}

}  // namespace zkdv::ui
