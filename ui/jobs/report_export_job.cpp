#include "report_export_job.h"

#include <QDir>
#include <QFileInfo>
#include <QTimer>

#include <memory>

#include "background_job.h"
#include "job_runner.h"
#include "report/report_document.h"
#include "report/report_pdf_writer.h"
#include "zkdv/store/case_store.h"
#include "zkdv/util/error.h"

namespace zkdv::ui {

namespace {

// A PDF's charts, one per turn of the event loop (the window stays responsive), then its
// pages in the background.
void writePdfInSteps(JobRunner& runner, const std::shared_ptr<ReportPdfWriter>& writer, const std::string& target, const QString& written,
                     const QString& shown)
{
    if (writer->drawNextChart()) {
        QTimer::singleShot(0, &runner, [&runner, writer, target, written, shown] { writePdfInSteps(runner, writer, target, written, shown); });
        return;
    }
    auto* pages = new BackgroundJob(QObject::tr("Writing the PDF report %1").arg(shown), Interruption::Cancel,
                                    [writer, target, written](ProgressSink& progress) {
        std::string error;
        if (!writePdfReport(*writer, target, &error, &progress))
            throw Error(error);
        return written;
    });
    runner.start(pages, {}, true);
}

}  // namespace

bool startReportExport(JobRunner& runner, const ReportDocumentRenderer& documents, const QString& casePath, const ReportOptions& options,
                       ReportFormat format, const QString& path)
{
    const std::string target = path.toStdString();
    auto report = std::make_shared<ReportData>();
    auto* job = new BackgroundJob(QObject::tr("Exporting the report to %1").arg(QFileInfo(path).fileName()), Interruption::Cancel,
                                  [casePath = casePath.toStdString(), target, format, options, report](ProgressSink&) {
        CaseStore store(casePath, CaseStore::Access::ReadOnly);
        *report = buildAuditReport(store, options);
        if (!isDocumentFormat(format))
            writeReport(*report, format, target, nullptr);
        return QString();
    });
    const QString shown = QDir::toNativeSeparators(path);
    return runner.start(job, [&runner, &documents, report, target, format, shown](bool& ok, QString& message) {
        if (!ok)
            return;
        const QString written = QObject::tr("%1 report written to %2: %3")
                                    .arg(QString::fromStdString(std::string(reportFormatName(format))).toUpper(), shown,
                                         QString::fromStdString(report->headline));
        if (format == ReportFormat::Html) {
            // One file with its charts as images: quick, drawn here.
            try {
                writeReport(*report, format, target, &documents);
                message = written;
            } catch (const std::exception& error) {
                ok = false;
                message = QObject::tr("Report not written: %1").arg(QString::fromStdString(error.what()));
            }
            return;
        }
        if (format != ReportFormat::Pdf) {
            message = written;
            return;
        }
        auto writer = std::make_shared<ReportPdfWriter>(*report);
        runner.continueWith([&runner, writer, target, written, shown] { writePdfInSteps(runner, writer, target, written, shown); });
    }, true);
}

}  // namespace zkdv::ui
