// Benchmark: how soon the workstation window is interactive after opening a case with
// 1,000,000 transactions, and how long until its charts hold every point.
//
//   bench_workstation [--dir DIR] [--rounds R]
//
// The case is built once (a synthetic 1M-transaction tape, ingested) and kept in DIR.

#include <QApplication>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "main_window.h"
#include "models/transaction_table_model.h"
#include "plots/chart_panel.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/store/case_store.h"

namespace {

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values.empty() ? 0 : values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv)
{
    qputenv("QT_QPA_PLATFORM", qgetenv("QT_QPA_PLATFORM").isEmpty() ? QByteArray("offscreen") : qgetenv("QT_QPA_PLATFORM"));
    QApplication app(argc, argv);
    QString dir = QStringLiteral("/tmp");
    int rounds = 3;
    const QStringList arguments = app.arguments();
    for (int i = 1; i + 1 < arguments.size(); i += 2) {
        if (arguments[i] == QLatin1String("--dir"))
            dir = arguments[i + 1];
        else if (arguments[i] == QLatin1String("--rounds"))
            rounds = arguments[i + 1].toInt();
    }
    const QString tape = dir + QStringLiteral("/bench-workstation-1m.zkdv"), casePath = dir + QStringLiteral("/bench-workstation-1m.zkaudit");
    if (!QFileInfo::exists(casePath)) {
        std::fprintf(stderr, "building the 1M-transaction case (once)...\n");
        zkdv::SyntheticDemoOptions options;
        options.steps = 1000000;
        options.batchSize = 4;
        options.overwrite = true;
        zkdv::writeSyntheticDemoTape(tape.toStdString(), options);
        zkdv::CaseStore(casePath.toStdString(), zkdv::CaseStore::Access::ReadWrite).ingestTape(tape.toStdString());
    }

    std::vector<double> interactive, chartsLoaded;
    int rows = 0, points = 0;
    for (int round = 0; round < rounds; ++round) {
        QElapsedTimer clock;
        clock.start();
        zkdv::ui::MainWindow window;
        window.show();
        QSignalSpy loaded(window.charts(), &zkdv::ui::ChartPanel::loaded);
        window.openCase(casePath);
        // Interactive: the window has returned to its event loop and answers a zero-delay timer.
        bool answered = false;
        QTimer::singleShot(0, &window, [&] { answered = true; });
        while (!answered)
            QApplication::processEvents(QEventLoop::AllEvents, 10);
        interactive.push_back(clock.elapsed());
        rows = window.transactionModel()->rowCount();
        if (loaded.isEmpty())
            loaded.wait(60000);
        chartsLoaded.push_back(clock.elapsed());
        points = window.charts()->lossPointCount();
    }
    std::printf("workstation on a %d-transaction case, %d rounds (median)\n", rows, rounds);
    std::printf("  window interactive after opening the case: %.0f ms\n", median(interactive));
    std::printf("  charts holding all %d loss points:         %.0f ms\n", points, median(chartsLoaded));
    return 0;
}
