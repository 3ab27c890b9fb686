// Benchmark: the workstation stays responsive during long operations. Budget (issue 19):
// input is handled within 100 ms while a report is exported and while the table is scrolled.
//
//   bench_responsiveness [--dir DIR] [--steps N] [--every K]
//
// Builds (once, cached in DIR) a case with N transactions (default 1,000,000) from a
// synthetic demo tape and one replay run with a verdict for every K-th transaction (default
// 50: 20,000 replayed transactions, a PDF of some 400 pages). Then, in a shown window on the
// offscreen platform:
//  - exports the PDF report while a 5 ms timer measures how late the event loop serves it
//    (the longest wait is the worst delay any input would have had);
//  - scrolls the table from top to bottom and back by Page Down / Page Up and End / Home key
//    presses, timing each key press from delivery to handled.
// Prints the figures and exits 1 when a worst delay exceeds the budget.

#include <QApplication>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QKeyEvent>
#include <QSignalSpy>
#include <QTableView>
#include <QTimer>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "main_window.h"
#include "models/transaction_table_model.h"
#include "report/report_pdf_writer.h"
#include "zkdv/audit/run_status.h"
#include "zkdv/report/audit_report.h"
#include "zkdv/audit/replay_outcome.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/replay_store.h"

namespace {

constexpr double kBudgetMs = 100.0;

std::string buildCase(const std::string& dir, std::uint64_t steps, std::uint64_t every)
{
    const std::string casePath = dir + "/responsive-" + std::to_string(steps) + "-" + std::to_string(every) + ".zkaudit";
    if (std::filesystem::exists(casePath))
        return casePath;
    std::filesystem::create_directories(dir);
    const std::string tape = dir + "/responsive-" + std::to_string(steps) + ".zkdv";
    zkdv::SyntheticDemoOptions options;
    options.steps = steps;
    options.batchSize = 4;
    options.features = 4;
    options.classes = 3;
    options.overwrite = true;
    std::printf("building %s ...\n", casePath.c_str());
    std::fflush(stdout);
    zkdv::writeSyntheticDemoTape(tape, options);
    const std::string partial = casePath + ".partial";
    std::filesystem::remove(partial);
    {
        zkdv::CaseStore store(partial, zkdv::CaseStore::Access::ReadWrite);
        const std::int64_t tapeId = store.ingestTape(tape).tapeId;
        zkdv::ReplayStore replays(store.database());
        zkdv::ReplayRunInfo info;
        info.tapeId = tapeId;
        info.device = "cpu";
        info.selection = "random:" + std::to_string(steps / every);
        info.tolerance = "ulp=64,rel=0.0001,fingerprint=0.0001";
        info.selectedCount = steps / every;
        const std::int64_t run = replays.beginRun(info);
        std::vector<zkdv::TransactionOutcome> outcomes;
        for (std::uint64_t index = 0; index < steps; index += every) {
            zkdv::TransactionOutcome outcome;
            outcome.index = index;
            outcome.segment = index / 12;
            outcome.verdict = (index / every) % 97 == 5 ? zkdv::Verdict::Diverged : zkdv::Verdict::Exact;
            outcome.detail = "bench";
            zkdv::TensorComparison comparison;
            comparison.tensor = "fc.weight";
            comparison.slot = "delta";
            comparison.verdict = outcome.verdict;
            comparison.metrics.elements = 12;
            comparison.metrics.bitwiseEqual = outcome.verdict == zkdv::Verdict::Exact;
            comparison.metrics.maxUlp = outcome.verdict == zkdv::Verdict::Diverged ? 4096.0 : 0.0;
            outcome.comparisons.push_back(comparison);
            outcomes.push_back(outcome);
        }
        replays.storeOutcomes(run, outcomes);
        replays.finishRun(run, zkdv::RunStatus::Finished, "");
    }
    std::filesystem::remove(tape);
    std::filesystem::rename(partial, casePath);
    for (const char* suffix : {"-wal", "-shm"})
        std::filesystem::remove(partial + suffix);
    return casePath;
}

// The longest the event loop kept a 5 ms timer waiting while `running` holds.
struct LoopLatency {
    double worstMs = 0;
    int ticks = 0;
};

}  // namespace

int main(int argc, char** argv)
{
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("zkdv-bench"));
    std::string dir = "bench-data";
    std::uint64_t steps = 1000000, every = 50;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--dir")
            dir = argv[i + 1];
        else if (flag == "--steps")
            steps = std::stoull(argv[i + 1]);
        else if (flag == "--every")
            every = std::max<std::uint64_t>(1, std::stoull(argv[i + 1]));
    }
    const std::string casePath = buildCase(dir, steps, every);

    zkdv::ui::MainWindow window;
    window.resize(1400, 900);
    window.show();
    if (!window.openCase(QString::fromStdString(casePath))) {
        std::fprintf(stderr, "cannot open %s\n", casePath.c_str());
        return 2;
    }
    QSignalSpy finished(&window, &zkdv::ui::MainWindow::jobFinished);

    // 1. PDF export, the event loop probed every 5 ms.
    LoopLatency latency;
    QElapsedTimer sinceTick;
    QTimer probe;
    probe.setInterval(5);
    QObject::connect(&probe, &QTimer::timeout, [&] {
        if (latency.ticks++ > 0)
            latency.worstMs = std::max(latency.worstMs, sinceTick.nsecsElapsed() / 1e6 - 5.0);
        sinceTick.restart();
    });
    const QString pdf = QString::fromStdString(dir + "/responsive.pdf");
    QElapsedTimer total;
    total.start();
    sinceTick.start();
    probe.start();
    if (!window.exportReport(pdf)) {
        std::fprintf(stderr, "export refused\n");
        return 2;
    }
    if (!finished.wait(1800000)) {
        std::fprintf(stderr, "export did not finish\n");
        return 2;
    }
    probe.stop();
    const bool exported = finished.takeFirst().at(0).toBool();
    const double exportSeconds = total.elapsed() / 1000.0;
    std::printf("PDF export of %llu replayed transactions (of %llu): %.1f s, %s, %lld bytes; event loop worst delay %.1f ms over %d ticks\n",
                static_cast<unsigned long long>(steps / every), static_cast<unsigned long long>(steps), exportSeconds,
                exported ? "written" : "FAILED", static_cast<long long>(QFileInfo(pdf).size()), latency.worstMs, latency.ticks);

    // What of the export runs on the GUI thread: drawing the charts into vector pictures.
    {
        zkdv::CaseStore store(casePath, zkdv::CaseStore::Access::ReadOnly);
        const zkdv::ReportData report = zkdv::buildAuditReport(store);
        zkdv::ui::ReportPdfWriter writer(report);
        std::vector<double> chartMs;
        for (bool more = true; more;) {
            QElapsedTimer chart;
            chart.start();
            more = writer.drawNextChart();
            chartMs.push_back(chart.nsecsElapsed() / 1e6);
        }
        std::printf("  of which on the GUI thread, one per turn of the event loop: the charts drawn in");
        for (double ms : chartMs)
            std::printf(" %.1f", ms);
        std::printf(" ms\n");
    }

    // 2. Scrolling: each key press timed from delivery to handled (paint included).
    QTableView* table = window.transactionView();
    table->setFocus();
    std::vector<double> keyMs;
    auto press = [&](Qt::Key key) {
        QKeyEvent down(QEvent::KeyPress, key, Qt::NoModifier);
        QElapsedTimer clock;
        clock.start();
        QApplication::sendEvent(table, &down);
        table->viewport()->repaint();
        QApplication::processEvents();
        keyMs.push_back(clock.nsecsElapsed() / 1e6);
    };
    for (int i = 0; i < 200; ++i)
        press(Qt::Key_PageDown);
    press(Qt::Key_End);
    for (int i = 0; i < 200; ++i)
        press(Qt::Key_PageUp);
    press(Qt::Key_Home);
    std::vector<double> sorted = keyMs;
    std::sort(sorted.begin(), sorted.end());
    const double worstKey = sorted.back();
    std::printf("scrolling %zu key presses over %d rows: median %.2f ms, 99th percentile %.2f ms, worst %.2f ms\n", keyMs.size(),
                window.transactionModel()->rowCount(), sorted[sorted.size() / 2], sorted[sorted.size() * 99 / 100], worstKey);

    const bool withinBudget = exported && latency.worstMs <= kBudgetMs && worstKey <= kBudgetMs;
    std::printf("budget %.0f ms: %s\n", kBudgetMs, withinBudget ? "met" : "NOT MET");
    return withinBudget ? 0 : 1;
}
