// core/workflow, which zkdv-audit and the workstation both call: one test per function, so
// that a change made for one frontend shows in the other's behaviour here first.

#include <QtTest>

#include <filesystem>
#include <fstream>
#include <set>

#include "file_bytes.h"
#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/graph/exported_graph.h"
#include "zkdv/report/audit_report.h"
#include "zkdv/store/case_store.h"
#include "zkdv/workflow/file_ingest.h"
#include "zkdv/workflow/handed_files.h"
#include "zkdv/workflow/replay_precheck.h"
#include "zkdv/workflow/replay_summary_text.h"
#include "zkdv/workflow/report_export.h"
#include "zkdv/workflow/tape_summary_text.h"

using namespace zkdv;

namespace {

// Records what it was asked to draw, and draws a line of text, as a toolkit's renderer would.
class RecordingRenderer : public ReportDocumentRenderer {
public:
    void write(const ReportData& report, ReportFormat format, const std::string& path) const override
    {
        formats.push_back(format);
        std::ofstream(path) << "document of " << report.headline;
    }
    mutable std::vector<ReportFormat> formats;
};

std::string readText(const std::string& path)
{
    const std::vector<std::uint8_t> bytes = test::readAll(path);
    return std::string(bytes.begin(), bytes.end());
}

}  // namespace

class TestWorkflow : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void ingestTakesTapesFirstAndGivesEveryFileOneResult();
    void ingestReportsEachFileAsItIsKnown();
    void replaySummaryWordsFollowTheRunStatus();
    void reportFormatsComeFromNamesAndExtensions();
    void writeReportWritesMachineFormatsAndHandsDocumentsToTheRenderer();
    void aReplayThatCanVerifyNothingSaysWhy();
    void handedFoldersStandForTheirFilesSortedByKind();

private:
    test::TempDir dir_;
    std::string tape_;
};

void TestWorkflow::initTestCase()
{
    tape_ = dir_.file("demo.zkdv");
    SyntheticDemoOptions options;
    options.steps = 14;
    writeSyntheticDemoTape(tape_, options);
}

void TestWorkflow::ingestTakesTapesFirstAndGivesEveryFileOneResult()
{
    std::vector<std::uint8_t> bytes = test::readAll(tape_);
    bytes[bytes.size() / 2] ^= 0x01;
    const std::string corrupt = dir_.file("corrupt.zkdv");
    test::writeAll(corrupt, bytes);
    const std::string junk = dir_.file("notes.txt");
    std::ofstream(junk) << "not a program of any tape";
    const std::string missing = dir_.file("missing.zkdv");

    CaseStore store(dir_.file("ingest.zkaudit"), CaseStore::Access::ReadWrite);
    // The program file first and an unreadable tape in the middle: neither stops the others.
    const std::vector<IngestedFile> files = ingestFiles(store, {junk, tape_, missing, corrupt, tape_}, IngestOptions{});
    QCOMPARE(files.size(), std::size_t(5));
    std::vector<std::string> order;
    for (const IngestedFile& file : files)
        order.push_back(file.path);
    QCOMPARE(order, (std::vector<std::string>{tape_, missing, corrupt, tape_, junk}));

    QCOMPARE(files[0].outcome, FileIngestOutcome::Ingested);
    QVERIFY(files[0].isTape() && files[0].ok() && files[0].tapeId > 0);
    QVERIFY(files[0].summary);
    QVERIFY2(files[0].describe().find(tapeCountsText(*files[0].summary)) != std::string::npos, files[0].describe().c_str());
    QCOMPARE(files[1].outcome, FileIngestOutcome::Unreadable);
    QVERIFY(!files[1].ok() && !files[1].error.empty());
    QCOMPARE(files[2].outcome, FileIngestOutcome::Rejected);
    QVERIFY(files[2].summary && files[2].summary->problem);
    QCOMPARE(files[2].describe(), files[2].error);
    QCOMPARE(files[3].outcome, FileIngestOutcome::AlreadyPresent);
    QCOMPARE(files[3].tapeId, files[0].tapeId);
    QCOMPARE(files[4].outcome, FileIngestOutcome::Unreadable);
    QVERIFY(!files[4].isTape());
    QCOMPARE(store.tapes().size(), std::size_t(1));
}

void TestWorkflow::ingestReportsEachFileAsItIsKnown()
{
    CaseStore store(dir_.file("heard.zkaudit"), CaseStore::Access::ReadWrite);
    std::vector<std::string> heard;
    const std::vector<IngestedFile> files =
        ingestFiles(store, {dir_.file("absent.bin"), tape_}, IngestOptions{}, [&](const IngestedFile& file) { heard.push_back(file.path); });
    QCOMPARE(heard.size(), files.size());
    for (std::size_t i = 0; i < files.size(); ++i)
        QCOMPARE(heard[i], files[i].path);
    QCOMPARE(fileIngestOutcomeName(FileIngestOutcome::AlreadyPresent), std::string_view("already-present"));
}

void TestWorkflow::replaySummaryWordsFollowTheRunStatus()
{
    ReplaySummary summary;
    summary.runId = 3;
    summary.tapeId = 1;
    summary.device = "cpu";
    summary.selection = "random:2";
    summary.seed = 42;
    summary.transactionCount = 14;
    summary.selected = {2, 9};
    summary.replayed = 4;
    summary.exact = 4;
    QCOMPARE(replayVerdictWord(summary), std::string("passed"));
    const std::string headline = replaySummaryHeadline(summary);
    for (const char* part : {"run 3", "tape 1", "cpu", "random:2", "42"})
        QVERIFY2(headline.find(part) != std::string::npos, (headline + " lacks " + part).c_str());
    QVERIFY(!replaySummaryDetails(summary).empty());

    summary.exact = 3;
    summary.diverged = 1;
    QCOMPARE(replayVerdictWord(summary), std::string("FAILED"));
    summary.diverged = 0;
    summary.exact = 4;
    summary.status = RunStatus::Stopped;
    // One name for a stopped run, wherever it is shown.
    QCOMPARE(replayVerdictWord(summary), std::string("INCOMPLETE (stopped)"));
    QVERIFY(replaySummaryHeadline(summary).find("INCOMPLETE (stopped)") != std::string::npos);
}

void TestWorkflow::reportFormatsComeFromNamesAndExtensions()
{
    QCOMPARE(reportFormatFromName("PDF"), std::optional<ReportFormat>(ReportFormat::Pdf));
    QCOMPARE(reportFormatFromName("htm"), std::optional<ReportFormat>(ReportFormat::Html));
    QCOMPARE(reportFormatFromName("json"), std::optional<ReportFormat>(ReportFormat::Json));
    QVERIFY(!reportFormatFromName("docx"));
    QCOMPARE(reportFormatOfPath("/a/b/report.CSV"), std::optional<ReportFormat>(ReportFormat::Csv));
    QVERIFY(!reportFormatOfPath("/a/b.pdf/report"));
    for (ReportFormat format : {ReportFormat::Json, ReportFormat::Csv, ReportFormat::Pdf, ReportFormat::Html})
        QCOMPARE(reportFormatFromName(reportFormatName(format)), std::optional<ReportFormat>(format));
}

void TestWorkflow::writeReportWritesMachineFormatsAndHandsDocumentsToTheRenderer()
{
    // A finding report: built without a replay (an audit report needs one, which needs libtorch).
    const ReportData report = buildTapeFindingReport(scanTape(tape_));
    RecordingRenderer renderer;

    writeReport(report, ReportFormat::Json, dir_.file("r.json"), &renderer);
    QVERIFY(readText(dir_.file("r.json")).find("\"headline\"") != std::string::npos);
    writeReport(report, ReportFormat::Csv, dir_.file("r.csv"), nullptr);
    QVERIFY(!readText(dir_.file("r.csv")).empty());
    QVERIFY(renderer.formats.empty());  // machine formats never reach the toolkit

    writeReport(report, ReportFormat::Pdf, dir_.file("r.pdf"), &renderer);
    writeReport(report, ReportFormat::Html, dir_.file("r.html"), &renderer);
    QCOMPARE(renderer.formats, (std::vector<ReportFormat>{ReportFormat::Pdf, ReportFormat::Html}));
    QCOMPARE(readText(dir_.file("r.pdf")), "document of " + report.headline);

    // Without a renderer a document is refused, and a file already there stays as it was.
    QVERIFY_THROWS_EXCEPTION(ReportFormatUnavailable, writeReport(report, ReportFormat::Pdf, dir_.file("r.pdf"), nullptr));
    QCOMPARE(readText(dir_.file("r.pdf")), "document of " + report.headline);
}

void TestWorkflow::aReplayThatCanVerifyNothingSaysWhy()
{
    CaseTape tape;
    tape.programKind = "torchscript";
    tape.programSha256 = "ab12";
    tape.programPresent = true;
    QCOMPARE(whyReplayVerifiesNothing(tape), std::string());
    tape.programKind = kExportedGraphKind;
    QCOMPARE(whyReplayVerifiesNothing(tape), std::string());

    tape.programPresent = false;
    const std::string lacking = whyReplayVerifiesNothing(tape);
    QVERIFY2(lacking.find("lacks") != std::string::npos && lacking.find("ab12") != std::string::npos, lacking.c_str());
    QCOMPARE(whyReplayVerifiesNothing(tape, /*programSupplied=*/true), std::string());

    tape.programKind = "pickle";
    const std::string foreign = whyReplayVerifiesNothing(tape, true);
    QVERIFY2(foreign.find("pickle") != std::string::npos && foreign.find("cannot be re-executed") != std::string::npos, foreign.c_str());
}


void TestWorkflow::handedFoldersStandForTheirFilesSortedByKind()
{
    namespace fs = std::filesystem;
    // A folder of a tape, a case, a program-like file and a subfolder, with a link back to
    // itself (expanding must not loop) and a name that sorts before the others.
    const fs::path folder = dir_.file("handed");
    fs::create_directories(folder / "sub");
    fs::copy_file(tape_, folder / "b.zkdv");
    fs::copy_file(tape_, folder / "sub" / "a.zkdv");
    { CaseStore(dir_.file("handed/c.zkaudit"), CaseStore::Access::ReadWrite); }
    std::ofstream(folder / "A-program.pt") << "perhaps a program";
    fs::create_directory_symlink(folder, folder / "sub" / "loop");
    const std::string missing = dir_.file("gone.zkdv");

    const std::vector<std::string> expanded = expandFolders({missing, folder.string()});
    std::vector<std::string> expected = {missing};
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(folder))
        if (entry.is_regular_file() && !entry.is_symlink())
            expected.push_back(entry.path().string());
    std::sort(expected.begin() + 1, expected.end());
    QCOMPARE(expanded, expected);
    QCOMPARE(expanded[1], (folder / "A-program.pt").string());  // bytewise: upper case first

    const HandedFiles handed = sortHandedFiles({missing, folder.string(), tape_});
    QCOMPARE(handed.cases, std::vector<std::string>{(folder / "c.zkaudit").string()});
    QCOMPARE(handed.tapes, (std::vector<std::string>{(folder / "b.zkdv").string(), (folder / "sub" / "a.zkdv").string(), tape_}));
    QCOMPARE(handed.others, std::vector<std::string>{(folder / "A-program.pt").string()});
    QCOMPARE(handed.unreadable.size(), std::size_t(1));
    QVERIFY2(handed.unreadable.front().find("gone.zkdv") != std::string::npos, handed.unreadable.front().c_str());
}

QTEST_GUILESS_MAIN(TestWorkflow)
#include "test_workflow.moc"
