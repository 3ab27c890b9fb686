// The PDF and HTML audit reports: the PDF's pages are not blank (pdftoppm) and its text
// (pdftotext) holds the verdict and the tape digest; a tampered tape's report says so on
// page one; the HTML file needs nothing from outside itself; the per-transaction table is
// capped with a pointer to the CSV; bad formats and paths are refused with a reason; a real
// truncated tape's report fails on page one; the
// demo case's report comes out in all four formats from the workstation and the CLI.
//
// Set ZKDV_REPORT_KEEP_DIR to keep the rendered files (docs/report-page1.png comes from there).

#include <QtTest>

#include <QImage>
#include <QProcess>
#include <QSet>
#include <QThread>
#include <QDir>
#include <QTextDocument>

#include <cmath>
#include <fstream>
#include <iterator>
#include <string>

#include "file_bytes.h"
#include "main_window.h"
#include "report/report_document.h"
#include "report/report_pdf_writer.h"
#include "zkdv/util/progress.h"
#include "settings/settings.h"
#include "temp_dir.h"
#include "zkdv/cnn_demo/cnn_demo.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/report/audit_attestation.h"
#include "zkdv/report/audit_report.h"
#include "zkdv/util/auditor_key.h"
#include "zkdv/store/case_store.h"
#include "zkdv/tape/tape_scanner.h"

using namespace zkdv;

using test::readText;

namespace {

const std::string kSha = "3f1c9a7be2d04c5581aa6e0f9b2d7c4e1a5f8b3c6d9e2f0a4b7c1d8e5f2a9b6c";
const std::string kTamperWarning = "The tape was altered after it was written: record 17 does not match the hash chain.";

ReportComparison comparison(const std::string& tensor, const std::string& slot, Verdict verdict, double maxUlp, double relL2)
{
    ReportComparison c;
    c.tensor = tensor;
    c.slot = slot;
    c.verdict = verdict;
    c.metrics.elements = 72;
    c.metrics.maxUlp = maxUlp;
    c.metrics.meanUlp = maxUlp / 4;
    c.metrics.relativeL2 = relL2;
    c.metrics.bitwiseEqual = maxUlp == 0;
    return c;
}

// A report as buildAuditReport would make it: `failures` diverged transactions among
// `replayed` random ones.
ReportData makeReport(std::size_t replayed, std::size_t failures)
{
    ReportData r;
    r.casePath = "/cases/demo.zkaudit";
    r.generatedAt = "2026-11-29T12:00:00Z";
    r.zkdvVersion = "0.1.0";
    r.tapeId = 1;
    r.tapePath = "/tapes/demo.zkdv";
    r.fileSha256 = kSha;
    r.chainHead = "a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1";
    r.tapeStatus = "sealed";
    r.transactionCount = std::max<std::uint64_t>(200, replayed * 2);
    r.snapshotCount = r.transactionCount / 12;
    r.producer = "zkdv-recorder 0.1.0";
    r.trainedOn = "cpu, torch 2.1.2, 2 intra-op threads";
    r.programKind = "torchscript";
    r.programSha256 = "5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d";
    r.programPresent = true;
    r.programCheck = ProgramCheck::Matched;
    r.parameterCount = 4;
    r.parameterElements = 1234;
    r.bufferCount = 3;
    r.layout = {"conv1.weight F32 [8, 1, 3, 3]", "conv1.bias F32 [8]", "fc.weight F32 [10, 128]", "fc.bias F32 [10]"};
    r.optimizerContract = "torch.optim.Adam (zkdv contract 1)";
    r.optimizerGroups = {R"({"lr":0.001,"betas":[0.9,0.999],"eps":1e-08,"weight_decay":0})"};
    r.runId = 1;
    r.runStatus = RunStatus::Finished;
    r.device = "cpu";
    r.libtorchVersion = "2.1.2";
    r.cudaVersion = "none";
    r.operatingSystem = "Debian GNU/Linux 12";
    r.selection = "random:" + std::to_string(replayed);
    r.seed = 1;
    r.tolerance = "max ULP 64, relative L2 1e-6";
    r.redoCommand = "zkdv-audit replay demo.zkaudit --select " + r.selection + " --seed 1";
    r.selectedCount = replayed;
    r.replayedCount = replayed;
    r.diverged = failures;
    r.exact = replayed - failures;
    r.outcome = failures == 0 ? AuditOutcome::Passed : AuditOutcome::Failed;
    r.headline = failures == 0 ? "The audit PASSED: every replayed step reproduced the recorded training exactly."
                               : "The audit FAILED: " + std::to_string(failures) + " replayed steps did not reproduce the recorded training.";
    SamplingStatement s;
    s.population = r.transactionCount;
    s.sampled = replayed;
    s.failures = failures;
    s.upper95 = 0.0451;
    s.upper99 = 0.0689;
    s.method = "hypergeometric (exact, finite population)";
    s.sentence = "With 95 % confidence, at most 4.5 % of the tape's transactions are bad.";
    r.sampling = s;
    for (std::uint64_t i = 0; i < r.transactionCount; ++i) {
        r.lossIndex.push_back(i);
        r.loss.push_back(2.3 * std::exp(-static_cast<double>(i) / 80.0) + 0.05 * std::sin(static_cast<double>(i)));
    }
    for (std::size_t k = 0; k < replayed; ++k) {
        ReportTransaction t;
        t.index = k * 2 + 1;
        t.segment = t.index / 12;
        const bool bad = k < failures;
        t.verdict = bad ? Verdict::Diverged : Verdict::Exact;
        t.detail = bad ? "fc.weight delta: max ULP 4096" : "bitwise equal";
        t.loss = r.loss[t.index];
        t.recordedLearningRate = 0.001;
        t.updateNorm = 0.01 + 0.001 * static_cast<double>(k);
        t.replayNs = 12'500'000;
        t.comparisons.push_back(comparison("loss", "loss", Verdict::Exact, 0, 0));
        t.comparisons.push_back(comparison("fc.weight", "delta", t.verdict, bad ? 4096 : 0, bad ? 3e-4 : 0));
        t.comparisons.push_back(comparison("fc.weight", "state/exp_avg", t.verdict, bad ? 512 : 0, bad ? 1e-5 : 0));
        if (bad) {
            ReportComparison worst = t.comparisons[1];
            worst.note = "transaction " + std::to_string(t.index);
            r.worstDivergences.push_back(worst);
        }
        r.transactions.push_back(t);
    }
    if (failures) {
        r.warnings = {kTamperWarning, "The tape is truncated: it ends at transaction 180 without its seal."};
        r.tapeStatus = "truncated";
    }
    return r;
}

// pdftotext keeps the font's ligatures ("ﬁ"); compatibility normalization spells them out.
QString simplified(const QString& text) { return text.normalized(QString::NormalizationForm_KC).simplified(); }

QString run(const QString& program, const QStringList& arguments)
{
    QProcess process;
    process.start(program, arguments);
    if (!process.waitForFinished(120000) || process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0)
        return QStringLiteral("<%1 failed: %2>").arg(program, QString::fromLocal8Bit(process.readAllStandardError()));
    return QString::fromUtf8(process.readAllStandardOutput());
}

QString pdfText(const QString& pdf, int firstPage = 0, int lastPage = 0)
{
    QStringList args = {QStringLiteral("-layout")};
    if (firstPage)
        args << QStringLiteral("-f") << QString::number(firstPage) << QStringLiteral("-l") << QString::number(lastPage);
    return run(QStringLiteral("pdftotext"), args << pdf << QStringLiteral("-"));
}

void keep(const std::string& path)
{
    const QByteArray dir = qgetenv("ZKDV_REPORT_KEEP_DIR");
    if (!dir.isEmpty()) {
        const QString target = QString::fromLocal8Bit(dir) + QLatin1Char('/') + QFileInfo(QString::fromStdString(path)).fileName();
        QFile::remove(target);
        QFile::copy(QString::fromStdString(path), target);
    }
}

}  // namespace

class TestReportDocument : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY2(!QStandardPaths::findExecutable(QStringLiteral("pdftoppm")).isEmpty() &&
                     !QStandardPaths::findExecutable(QStringLiteral("pdftotext")).isEmpty(),
                 "pdftoppm and pdftotext (poppler-utils, packaging/install-deps.sh) are needed");
    }

    void pdfPagesAreNotBlank()
    {
        test::TempDir dir;
        const std::string pdf = dir.file("passed.pdf");
        std::string error;
        QVERIFY2(ui::renderReportDocument(makeReport(24, 0), "pdf", pdf, &error), error.c_str());
        keep(pdf);
        const QString prefix = QString::fromStdString(dir.file("page"));
        run(QStringLiteral("pdftoppm"), {QStringLiteral("-r"), QStringLiteral("50"), QStringLiteral("-png"), QString::fromStdString(pdf), prefix});
        const QStringList pages = QDir(QString::fromStdString(dir.path())).entryList({QStringLiteral("page*.png")}, QDir::Files, QDir::Name);
        QVERIFY2(pages.size() >= 3, qPrintable(QStringLiteral("%1 pages").arg(pages.size())));  // summary, charts, table
        for (const QString& name : pages) {
            const QImage image(QString::fromStdString(dir.path()) + QLatin1Char('/') + name);
            QVERIFY(!image.isNull());
            qint64 inked = 0;
            QSet<QRgb> colours;
            for (int y = 0; y < image.height(); ++y)
                for (int x = 0; x < image.width(); ++x) {
                    const QRgb pixel = image.pixel(x, y);
                    colours.insert(pixel);
                    if (qGray(pixel) < 200)
                        ++inked;
                }
            const double fraction = static_cast<double>(inked) / (static_cast<double>(image.width()) * image.height());
            QVERIFY2(fraction > 0.002 && colours.size() > 8,
                     qPrintable(QStringLiteral("%1: %2 inked, %3 colours").arg(name).arg(fraction).arg(colours.size())));
        }
        const QString text = simplified(pdfText(QString::fromStdString(pdf)));
        QVERIFY2(text.contains(QStringLiteral("PASSED")), qPrintable(text.left(400)));
        QVERIFY(text.contains(QString::fromStdString(kSha)));
        QVERIFY(text.contains(QStringLiteral("zkdv-audit replay demo.zkaudit --select random:24 --seed 1")));
        QVERIFY(text.contains(QStringLiteral("With 95 % confidence")));
        QVERIFY(text.contains(QStringLiteral("conv1.weight F32 [8, 1, 3, 3]")));
        QVERIFY(!text.contains(QStringLiteral("FAILED")));
    }

    void tamperedTapeFailsOnPageOne()
    {
        test::TempDir dir;
        const std::string pdf = dir.file("tampered.pdf");
        std::string error;
        const ReportData report = makeReport(30, 3);
        QVERIFY2(ui::renderReportDocument(report, "pdf", pdf, &error), error.c_str());
        keep(pdf);
        const QString first = simplified(pdfText(QString::fromStdString(pdf), 1, 1));
        QVERIFY2(first.contains(QStringLiteral("FAILED")), qPrintable(first.left(400)));
        QVERIFY2(first.contains(QString::fromStdString(kTamperWarning)), qPrintable(first.left(800)));
        QVERIFY(first.contains(QString::fromStdString(report.headline)));
        QVERIFY(first.contains(QStringLiteral("truncated")));
        // The worst divergences name the tensor and slot.
        const QString all = simplified(pdfText(QString::fromStdString(pdf)));
        QVERIFY(all.contains(QStringLiteral("fc.weight")));
        QVERIFY(all.contains(QStringLiteral("fc.weight delta diverged 4096")));
    }

    void htmlIsSelfContained()
    {
        test::TempDir dir;
        const std::string path = dir.file("tampered.html");
        std::string error;
        QVERIFY2(ui::renderReportDocument(makeReport(30, 3), "html", path, &error), error.c_str());
        keep(path);
        const std::string html = readText(path);
        for (const char* external : {"http://", "https://", "<link", "src=\"http", "<script", "url("})
            QVERIFY2(html.find(external) == std::string::npos, external);
        QVERIFY(html.find("data:image/png;base64,") != std::string::npos);
        QVERIFY(html.find(kSha) != std::string::npos);
        QVERIFY(html.find("FAILED") != std::string::npos);
        // Verdict, headline and warnings come before any table.
        const auto warning = html.find(QString::fromStdString(kTamperWarning).toHtmlEscaped().toStdString());
        QVERIFY(warning != std::string::npos);
        QVERIFY(warning < html.find("<table"));
        // Every img is an embedded image.
        std::size_t at = 0, images = 0;
        while ((at = html.find("<img", at)) != std::string::npos) {
            ++images;
            QVERIFY(html.compare(html.find("src=\"", at) + 5, 5, "data:") == 0);
            ++at;
        }
        QCOMPARE(images, std::size_t(3));
    }

    void auditorNotesArePrinted()
    {
        test::TempDir dir;
        ReportData report = makeReport(30, 3);
        const std::string html0 = readText([&] {
            const std::string path = dir.file("no-notes.html");
            std::string error;
            if (!ui::renderReportDocument(report, "html", path, &error))
                qWarning("%s", error.c_str());
            return path;
        }());
        QVERIFY(html0.find("Auditor notes") != std::string::npos);
        QVERIFY(html0.find("No transaction was flagged or annotated.") != std::string::npos);
        TransactionNote suspicious;
        suspicious.index = 7;
        suspicious.flag = TransactionFlag::Suspicious;
        suspicious.note = "lr <jumps> here\nask the trainer";
        suspicious.author = "alice";
        suspicious.updatedAt = "2026-12-01T21:00:00Z";
        TransactionNote question = suspicious;
        question.index = 150;  // not replayed: listed all the same
        question.flag = TransactionFlag::Question;
        question.note = "why is the loss flat?";
        report.auditorNotes = {suspicious, question};
        report.auditorNoteSigners = {"ed25519:0123456789abcdef (this user's key)", "unsigned"};
        const std::string path = dir.file("notes.html");
        std::string error;
        QVERIFY2(ui::renderReportDocument(report, "html", path, &error), error.c_str());
        const std::string html = readText(path);
        QVERIFY(html.find("No transaction was flagged or annotated.") == std::string::npos);
        QVERIFY(html.find("lr &lt;jumps&gt; here<br>ask the trainer") != std::string::npos);  // escaped, lines kept
        QVERIFY(html.find(">suspicious</td>") != std::string::npos);
        QVERIFY(html.find(">150</td>") != std::string::npos);
        QVERIFY(html.find("why is the loss flat?") != std::string::npos);
        // Who wrote each note, and whose key signed it.
        QVERIFY(html.find(">alice<br>ed25519:0123456789abcdef (this user&#x27;s key)</td>") != std::string::npos ||
                html.find(">alice<br>ed25519:0123456789abcdef (this user's key)</td>") != std::string::npos);
        QVERIFY(html.find(">alice<br>unsigned</td>") != std::string::npos);
        // Before the replayed transactions' table: it is part of the summary (page one of the PDF).
        QVERIFY(html.find("Auditor notes") < html.find("Replayed transactions"));
        const std::string pdf = dir.file("notes.pdf");
        QVERIFY2(ui::renderReportDocument(report, "pdf", pdf, &error), error.c_str());
        QVERIFY(simplified(pdfText(QString::fromStdString(pdf))).contains(QStringLiteral("why is the loss flat?")));
    }

    void transactionTableIsCapped()
    {
        test::TempDir dir;
        const std::string path = dir.file("large.html");
        std::string error;
        QVERIFY2(ui::renderReportDocument(makeReport(2500, 0), "html", path, &error), error.c_str());
        const std::string html = readText(path);
        QVERIFY(html.find("The first 2000 of 2500 replayed transactions") != std::string::npos);
        QVERIFY(html.find("--format csv") != std::string::npos);
        QVERIFY(html.find(">3999</td>") != std::string::npos);   // row 2000
        QVERIFY(html.find(">4001</td>") == std::string::npos);   // row 2001
    }

    void refusesBadFormatsAndPaths()
    {
        std::string error;
        QVERIFY(!ui::renderReportDocument(makeReport(2, 0), "docx", "/tmp/x.docx", &error));
        QVERIFY(error.find("docx") != std::string::npos);
        error.clear();
        QVERIFY(!ui::renderReportDocument(makeReport(2, 0), "html", "/nonexistent-dir/report.html", &error));
        QVERIFY(error.find("/nonexistent-dir/report.html") != std::string::npos);
        error.clear();
        QVERIFY(!ui::renderReportDocument(makeReport(2, 0), "pdf", "/nonexistent-dir/report.pdf", &error));
        QVERIFY(error.find("/nonexistent-dir/report.pdf") != std::string::npos);
    }

    // The demo case (36 steps, random:6 with seed 1): buildAuditReport's report renders, and
    // File → Export Report… and `zkdv-audit report` write all four formats.
    void demoCaseInEveryFormat()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("zkdv-tests"));
        QCoreApplication::setApplicationName(QStringLiteral("test_report_document"));
        test::TempDir dir;
        const std::string tape = dir.file("demo.zkdv"), casePath = dir.file("demo.zkaudit");
        CnnDemoOptions options;
        options.steps = 36;
        options.batchSize = 8;
        runCnnDemo(tape, options);
        ReportData report;
        {
            CaseStore store(casePath, CaseStore::Access::ReadWrite);
            store.ingestTape(tape, {});
            ReplayRequest request;
            request.selection = SelectionSpec::parse("random:6");
            request.seed = 1;
            QVERIFY(runReplay(store, request).passed());
            report = buildAuditReport(store);
        }
        QVERIFY(report.passed());
        QCOMPARE(report.chainHead.size(), std::size_t(64));

        std::string error;
        const std::string pdf = dir.file("demo-report.pdf");
        QVERIFY2(ui::renderReportDocument(report, "pdf", pdf, &error), error.c_str());
        keep(pdf);
        const QString text = simplified(pdfText(QString::fromStdString(pdf)));
        QVERIFY(text.contains(QStringLiteral("PASSED")));
        QVERIFY(text.contains(QString::fromStdString(report.chainHead)));
        // A long command wraps, at spaces or inside a long path: compare without whitespace.
        const auto squeezed = [](QString t) { return t.remove(QLatin1Char(' ')); };
        QVERIFY(squeezed(text).contains(squeezed(simplified(QString::fromStdString(report.redoCommand)))));

        // The workstation.
        ui::MainWindow window;
        QVERIFY(window.openCase(QString::fromStdString(casePath)));
        QSignalSpy finished(&window, &ui::MainWindow::jobFinished);
        for (const char* format : {"pdf", "html", "json", "csv"}) {
            const QString path = QString::fromStdString(dir.file(std::string("gui.") + format));
            QVERIFY(window.exportReport(path));
            QVERIFY(finished.wait(120000));
            const QList<QVariant> arguments = finished.takeFirst();
            QVERIFY2(arguments.at(0).toBool(), qPrintable(arguments.at(1).toString()));
            QVERIFY2(QFileInfo(path).size() > 0, format);
        }
        QVERIFY(simplified(pdfText(QString::fromStdString(dir.file("gui.pdf")))).contains(QString::fromStdString(report.chainHead)));
        QVERIFY(readText(dir.file("gui.html")).find("data:image/png;base64,") != std::string::npos);
        QVERIFY(readText(dir.file("gui.json")).find(report.chainHead) != std::string::npos);
        QVERIFY(!window.exportReport(QString::fromStdString(dir.file("gui.docx"))));

        // The signed verdict, with the auditor's own key: it checks with that key's public half.
        const QString verdict = QString::fromStdString(dir.file("gui.intoto.json"));
        QVERIFY(window.exportSignedVerdict(verdict));
        QVERIFY(finished.wait(120000));
        const QList<QVariant> signedArguments = finished.takeFirst();
        QVERIFY2(signedArguments.at(0).toBool(), qPrintable(signedArguments.at(1).toString()));
        const CheckedAttestation checked = checkAuditAttestation(readText(verdict.toStdString()), {VerifyingKey::fromPemFile(AuditorKey::defaultFile())});
        QCOMPARE(checked.verificationResult, std::string("PASSED"));
        QCOMPARE(checked.tapeChainHead, report.chainHead);

        // The command line.
        for (const char* format : {"pdf", "html", "json", "csv"}) {
            const QString path = QString::fromStdString(dir.file(std::string("cli.") + format));
            QProcess cli;
            cli.start(QStringLiteral(ZKDV_AUDIT_EXECUTABLE), {QStringLiteral("report"), QString::fromStdString(casePath), QStringLiteral("-o"), path});
            QVERIFY(cli.waitForFinished(120000));
            QVERIFY2(cli.exitCode() == 0, qPrintable(QString::fromLocal8Bit(cli.readAllStandardError())));
            QVERIFY2(QFileInfo(path).size() > 0, format);
        }
        QVERIFY(simplified(pdfText(QString::fromStdString(dir.file("cli.pdf")))).contains(QString::fromStdString(report.chainHead)));
        const std::string html = readText(dir.file("cli.html"));
        QVERIFY(html.find("data:image/png;base64,") != std::string::npos);
        QVERIFY(html.find("https://") == std::string::npos && html.find("http://") == std::string::npos);
    }

    // A real truncated tape (the demo tape cut inside a record): its report fails, and says
    // why on page one.
    void truncatedTapeFailsOnPageOne()
    {
        test::TempDir dir;
        const std::string tape = dir.file("demo.zkdv"), truncated = dir.file("truncated.zkdv"), casePath = dir.file("truncated.zkaudit");
        CnnDemoOptions options;
        options.steps = 36;
        options.batchSize = 8;
        runCnnDemo(tape, options);
        std::string bytes = readText(tape);
        bytes.resize(bytes.size() * 2 / 3);
        std::ofstream(truncated, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        ReportData report;
        {
            CaseStore store(casePath, CaseStore::Access::ReadWrite);
            IngestOptions ingest;
            ingest.allowIncomplete = true;
            store.ingestTape(truncated, ingest);
            ReplayRequest request;
            request.selection = SelectionSpec::parse("random:6");
            request.seed = 1;
            runReplay(store, request);
            report = buildAuditReport(store);
        }
        QVERIFY(!report.passed());
        QVERIFY(!report.warnings.empty());
        const std::string pdf = dir.file("truncated.pdf");
        std::string error;
        QVERIFY2(ui::renderReportDocument(report, "pdf", pdf, &error), error.c_str());
        keep(pdf);
        const QString first = simplified(pdfText(QString::fromStdString(pdf), 1, 1));
        // Incomplete, not failed and never passed: the title says what the audit could show.
        QCOMPARE(report.outcome, AuditOutcome::IncompleteTape);
        QVERIFY2(first.contains(QStringLiteral("Audit INCOMPLETE TAPE")), qPrintable(first.left(400)));
        QVERIFY2(!first.contains(QStringLiteral("PASSED")) && !first.contains(QStringLiteral("FAILED")), qPrintable(first.left(400)));
        QVERIFY2(first.contains(simplified(QString::fromStdString(report.warnings.front()))), qPrintable(first.left(800)));
        QVERIFY(first.contains(simplified(QString::fromStdString(report.headline))));
    }

    void pdfPagesAreWrittenOffTheGuiThreadAndCanBeCancelled()
    {
        test::TempDir dir;
        const ReportData report = makeReport(400, 3);  // several pages of transactions
        ui::ReportPdfWriter writer(report);
        std::string undrawn;
        QVERIFY(!ui::writePdfReport(writer, dir.file("undrawn.pdf"), &undrawn, nullptr));  // charts first
        QVERIFY2(undrawn.find("charts") != std::string::npos, undrawn.c_str());
        writer.drawAllCharts();                            // here, on the GUI thread
        // The pages, on another thread: what the workstation's export job does.
        const std::string path = dir.file("threaded.pdf");
        struct Pages : ProgressSink {
            void report(std::uint64_t done, std::uint64_t total, std::string_view) override
            {
                last = done;
                pages = total;
            }
            std::uint64_t last = 0, pages = 0;
        } pages;
        bool ok = false;
        std::string error;
        QThread* thread = QThread::create([&] { ok = ui::writePdfReport(writer, path, &error, &pages); });
        thread->start();
        QVERIFY(thread->wait(120000));
        delete thread;
        QVERIFY2(ok, error.c_str());
        QVERIFY(pages.pages >= 3);
        QCOMPARE(pages.last, pages.pages);
        QVERIFY(simplified(pdfText(QString::fromStdString(path))).contains(simplified(QString::fromStdString(report.headline))));

        // Stopped after the first page: no report at the path, no temporary file beside it.
        struct StopAfterFirst : ProgressSink {
            void report(std::uint64_t done, std::uint64_t, std::string_view) override { stop = done >= 1; }
            bool cancelRequested() const override { return stop; }
            bool stop = false;
        } stopper;
        const std::string stopped = dir.file("stopped.pdf");
        QVERIFY_THROWS_EXCEPTION(OperationCancelled, ui::writePdfReport(writer, stopped, &error, &stopper));
        QVERIFY(!QFileInfo::exists(QString::fromStdString(stopped)));
        QCOMPARE(QDir(QString::fromStdString(dir.path())).entryList({QStringLiteral("stopped*")}, QDir::Files), QStringList());
    }

    // The report of a tape that could not be ingested says what the scan found and nothing it
    // could not know: no run, seed, tape id or element count of zero, no empty verdict table,
    // charts or transaction pages.
    void findingReportSaysOnlyWhatIsKnown()
    {
        test::TempDir dir;
        TapeSummary summary;
        summary.path = "/tapes/damaged.zkdv";
        summary.status = TapeStatus::Corrupt;
        summary.fileSize = 90000;
        summary.validBytes = 40312;
        summary.recordCount = 40;
        summary.transactionCount = 12;
        summary.snapshotCount = 2;
        summary.problem = TapeProblem{40, 40312, "the record's digest does not match its bytes"};
        const ReportData report = buildTapeFindingReport(summary);
        std::string error;
        const std::string html = dir.file("finding.html"), pdf = dir.file("finding.pdf");
        QVERIFY2(ui::renderReportDocument(report, "html", html, &error), error.c_str());
        QVERIFY2(ui::renderReportDocument(report, "pdf", pdf, &error), error.c_str());
        keep(pdf);
        QTextDocument document;
        document.setHtml(QString::fromStdString(readText(html)));
        const QString htmlText = simplified(document.toPlainText());
        const QString pdfAll = simplified(pdfText(QString::fromStdString(pdf)));
        for (const QString& text : {htmlText, pdfAll}) {
            QVERIFY2(text.contains(QStringLiteral("FAILED")), qPrintable(text.left(600)));
            QVERIFY2(text.contains(QStringLiteral("/tapes/damaged.zkdv")), qPrintable(text.left(600)));
            for (const char* unknown : {"Run #0", "Tape #0", "#0 ", "Seed 0", "0 elements", "Seed", "Selected", "Replayed transactions",
                                        "Worst divergences", "Charts", "Loss over"})
                QVERIFY2(!text.contains(QLatin1String(unknown)), qPrintable(QStringLiteral("\"%1\" in: %2").arg(QLatin1String(unknown), text)));
        }
        QVERIFY(!QString::fromStdString(readText(html)).contains(QStringLiteral("<img")));
        QVERIFY2(pdfText(QString::fromStdString(pdf), 2, 2).startsWith(QLatin1Char('<')), "one page, no charts or table pages");
    }

    // On a PDF page the redo command is one line, whole, whatever its length, and no table
    // header is split inside a word.
    void redoCommandAndHeadersStayWhole()
    {
        test::TempDir dir;
        ReportData report = makeReport(24, 1);
        report.redoCommand = "zkdv-audit replay /srv/audits/2026/customer-acme-vision/case-archive/acme-resnet-finetune-run-0042.zkaudit "
                             "--tape 1 --select random:24 --seed 18446744073709551557 --tolerance ulp=64,rel-l2=1e-6 --threads 4";
        const std::string pdf = dir.file("redo.pdf");
        std::string error;
        QVERIFY2(ui::renderReportDocument(report, "pdf", pdf, &error), error.c_str());
        keep(pdf);
        const QString text = pdfText(QString::fromStdString(pdf));
        bool oneLine = false;
        for (const QString& line : text.split(QLatin1Char('\n')))
            oneLine = oneLine || simplified(line).contains(QString::fromStdString(report.redoCommand));
        QVERIFY2(oneLine, qPrintable(text));
        const QStringList words = simplified(text).split(QLatin1Char(' '));
        for (const char* header : {"Selected", "Replayed", "Exact", "Within", "tolerance", "Diverged", "Unverifiable", "Transaction",
                                   "Segment", "Why", "Verdict", "Loss", "Update", "norm", "Detail", "Tensor", "Slot", "Mean",
                                   "Cosine", "NaN/Inf", "mismatches,", "where"})
            QVERIFY2(words.contains(QLatin1String(header)), qPrintable(QStringLiteral("header word \"%1\" split: %2").arg(QLatin1String(header), text)));
    }

    void emptyReportStillRenders()
    {
        test::TempDir dir;
        ReportData report;
        report.headline = "No replay has been run on this tape yet.";
        report.warnings = {"The tape is unsealed."};
        std::string error;
        QVERIFY2(ui::renderReportDocument(report, "pdf", dir.file("empty.pdf"), &error), error.c_str());
        QVERIFY2(ui::renderReportDocument(report, "html", dir.file("empty.html"), &error), error.c_str());
        QVERIFY(simplified(pdfText(QString::fromStdString(dir.file("empty.pdf")), 1, 1)).contains(QStringLiteral("The tape is unsealed.")));
    }
};

QTEST_MAIN(TestReportDocument)
#include "test_report_document.moc"
