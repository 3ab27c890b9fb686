// Makes the workstation screenshots in docs/ from a fresh demo case, on the offscreen
// platform (fonts and palette of the machine it runs on):
//
//   cmake --build build --target workstation_screenshots && build/bin/workstation_screenshots docs
//
// workstation.png: a tampered tape after two replay runs, All runs shown, the tampered
// transaction diverged in one run and within a loose tolerance in the other (marked ≠);
// workstation-finding.png: a corrupt tape dropped on the window; workstation-record-bytes.png:
// its record at fault in the Record Bytes pane; workstation-moved-tape.png:
// the case reopened after its tape moved.

#include <QApplication>
#include <QPushButton>
#include <QFile>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>

#include <cstdio>
#include <filesystem>

#include "dishonest_trainer.h"
#include "file_bytes.h"
#include "jobs/background_job.h"
#include "main_window.h"
#include "models/transaction_table_model.h"
#include "plots/chart_panel.h"
#include "settings/settings.h"
#include "widgets/finding_banner.h"
#include "widgets/record_bytes_pane.h"
#include "widgets/transaction_detail_pane.h"
#include "temp_dir.h"
#include "zkdv/cnn_demo/cnn_demo.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/store/case_store.h"

using namespace zkdv;

namespace {

bool save(QWidget& window, const QString& path)
{
    QTest::qWait(600);  // charts and rows arrive from their threads
    const bool ok = window.grab().save(path);
    std::printf("%s %s\n", ok ? "wrote" : "could not write", qPrintable(path));
    return ok;
}

bool waitForJob(ui::MainWindow& window)
{
    QSignalSpy finished(&window, &ui::MainWindow::jobFinished);
    return window.currentJob() == nullptr || !window.currentJob()->isRunning() || finished.wait(300000);
}

// Presses the finding banner's Show Record Bytes and waits for the record to be read.
bool showRecordAtFault(ui::MainWindow& window)
{
    QPushButton* button = nullptr;
    for (QPushButton* candidate : window.findingBanner()->findChildren<QPushButton*>())
        if (candidate->text() == QObject::tr("Show Record Bytes"))
            button = candidate;
    if (!button || !button->isEnabled())
        return false;
    QSignalSpy loaded(window.recordBytesPane(), &ui::RecordBytesPane::loaded);
    button->click();
    return loaded.wait(30000);
}

}  // namespace

int main(int argc, char** argv)
{
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("zkdv-screenshots"));
    const QString out = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QStringLiteral("docs");
    test::TempDir dir;
    ui::Settings::clearRecentFiles();

    const std::string honest = dir.file("honest.zkdv");
    CnnDemoOptions options;
    options.steps = 120;
    options.batchSize = 8;
    options.updateCheckProbability = 1.0;
    runCnnDemo(honest, options);
    const std::uint64_t victim = 30;
    const std::string tape = dir.file("demo.zkdv");
    test::rewriteTape(honest, tape, [&](test::RawRecord& record) {
        if (test::isTransaction(record, victim))
            test::scaleElement(record, "delta/fc.weight", 3, 1.5f);
    });
    const std::string casePath = dir.file("demo.zkaudit");
    {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        store.ingestTape(tape);
        ReplayRequest first;
        first.selection = SelectionSpec::parse("ids:" + std::to_string(victim) + ",60,90");
        first.seed = 7;
        runReplay(store, first);
        ReplayRequest loose;
        loose.selection = SelectionSpec::parse("ids:" + std::to_string(victim) + ",31,32");
        loose.tolerance = Tolerance::parse("ulp=1e12,rel=1,fingerprint=1");
        runReplay(store, loose);
    }

    ui::MainWindow window;
    window.resize(1700, 950);
    window.show();
    if (!window.openCase(QString::fromStdString(casePath)))
        return 2;
    // The detail pane has its own screenshot (docs/transaction-details.png): closed here so
    // that the table shows every column.
    if (auto* details = window.findChild<ui::TransactionDetailPane*>())
        details->hide();
    const int row = window.transactionModel()->rowOfTransaction(victim);
    window.transactionView()->selectRow(row);
    window.transactionView()->scrollTo(window.transactionModel()->index(row, 0), QAbstractItemView::PositionAtCenter);
    bool ok = save(window, out + QStringLiteral("/workstation.png"));

    // The default layout at the smallest size the workstation is made for: the detail pane
    // open beside the table, whose verdict, worst divergence and note columns stay in view.
    if (auto* details = window.findChild<ui::TransactionDetailPane*>())
        details->show();
    window.resize(1024, 700);
    window.transactionView()->scrollTo(window.transactionModel()->index(row, 0), QAbstractItemView::PositionAtCenter);
    ok = save(window, out + QStringLiteral("/workstation-1024x700.png")) && ok;
    window.resize(1700, 950);

    // A corrupt tape dropped on the window: the finding stays in view.
    std::vector<std::uint8_t> bytes = test::readAll(honest);
    bytes[bytes.size() / 2] ^= 0x10;
    const std::string corrupt = dir.file("corrupt.zkdv");
    test::writeAll(corrupt, bytes);
    window.openPaths({QString::fromStdString(corrupt)});
    ok = waitForJob(window) && ok;
    ok = save(window, out + QStringLiteral("/workstation-finding.png")) && ok;

    // The finding's record, field by field beside its bytes, the byte at fault marked.
    ok = showRecordAtFault(window) && ok;
    ok = save(window, out + QStringLiteral("/workstation-record-bytes.png")) && ok;

    // The case reopened after its tape moved.
    window.openCase(QString());
    std::filesystem::rename(tape, dir.file("moved.zkdv"));
    window.openCase(QString::fromStdString(casePath));
    ok = save(window, out + QStringLiteral("/workstation-moved-tape.png")) && ok;
    return ok ? 0 : 1;
}
