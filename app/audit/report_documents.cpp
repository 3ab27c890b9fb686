#ifdef ZKDV_WITH_REPORT_DOCUMENTS

#include "report_documents.h"

#include <QApplication>

#include <memory>

#include "report/report_document.h"

namespace zkdv::cli {

namespace {

QtMessageHandler previousHandler = nullptr;

// Qt notes a missing XDG_RUNTIME_DIR on every headless start; a terminal user cannot act on
// it, so it is dropped. Everything else goes where it went before.
void quietHandler(QtMsgType type, const QMessageLogContext& context, const QString& message)
{
    if (type == QtWarningMsg && message.startsWith(QStringLiteral("QStandardPaths: XDG_RUNTIME_DIR not set")))
        return;
    if (previousHandler)
        previousHandler(type, context, message);
}

}  // namespace

void HeadlessReportDocuments::write(const ReportData& report, ReportFormat format, const std::string& path) const
{
    // The charts are widgets: they need a QApplication, and a terminal has no display.
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    previousHandler = qInstallMessageHandler(quietHandler);
    static int argc = 1;
    static char name[] = "zkdv-audit";
    static char* argv[] = {name, nullptr};
    std::unique_ptr<QApplication> application;
    if (!QCoreApplication::instance())
        application = std::make_unique<QApplication>(argc, argv);
    try {
        ui::ReportDocuments().write(report, format, path);
    } catch (...) {
        application.reset();
        qInstallMessageHandler(previousHandler);
        throw;
    }
    application.reset();
    qInstallMessageHandler(previousHandler);
}

}  // namespace zkdv::cli

#endif  // ZKDV_WITH_REPORT_DOCUMENTS
