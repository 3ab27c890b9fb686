// Benchmark: the workstation's loss chart with 1,000,000 points.
//
//   bench_charts [--points N] [--runs R] [--width W] [--height H] [--dir DIR [--steps S]]
//
// Part 1 (synthetic values): QCPGraph::setData(keys, values, alreadySorted) of N points,
// then QCustomPlot::replot(rpImmediateRefresh) of an offscreen W x H widget, median of R,
// for a plain QCustomPlot holding only the loss graph and for the workstation's
// TransactionChart (loss, two update-norm graphs of N points, 1 % of the transactions
// marked by verdict; then without markers, and with the loss alone), each over the whole range and zoomed in to 1 % and 0.01 % of it.
//
// Part 2 (with --dir): a synthetic demo tape of S transactions (default 1,000,000) and a
// case with it (both kept in DIR and reused), then: loadTransactionSeries (SQL to vectors),
// ChartData::read (what the panel's reader thread does) and ChartPanel::setCase until
// loaded() (read plus applying it on the GUI thread), median of 3.

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTimer>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <qcustomplot.h>

#include "plots/chart_data.h"
#include "plots/chart_panel.h"
#include "plots/transaction_chart.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/transaction_series.h"

namespace {

double milliseconds(const std::function<void()>& work)
{
    auto start = std::chrono::steady_clock::now();
    work();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

double threadCpuMilliseconds()
{
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return now.tv_sec * 1e3 + now.tv_nsec / 1e6;
}

double lastCpuMedian = 0;  // CPU time of the calling thread, median of the last medianOf

// Median wall time of `runs` calls; the median CPU time goes to lastCpuMedian (on a shared
// machine the CPU time is the steadier figure).
double medianOf(int runs, const std::function<void()>& work)
{
    std::vector<double> times, cpu;
    for (int i = 0; i < runs; ++i) {
        const double cpuStart = threadCpuMilliseconds();
        times.push_back(milliseconds(work));
        cpu.push_back(threadCpuMilliseconds() - cpuStart);
    }
    lastCpuMedian = median(cpu);
    return median(times);
}

// Replot times over the whole range and zoomed to 1 % and 0.01 % around the middle.
void reportReplots(const char* what, QCustomPlot& plot, double points, int runs)
{
    struct Zoom {
        const char* name;
        double span;
    };
    for (Zoom zoom : {Zoom{"all", points}, Zoom{"1 %", points / 100}, Zoom{"0.01 %", points / 10000}}) {
        plot.xAxis->setRange(points / 2 - zoom.span / 2, points / 2 + zoom.span / 2);
        plot.replot(QCustomPlot::rpImmediateRefresh);  // warm
        const double ms = medianOf(runs, [&] { plot.replot(QCustomPlot::rpImmediateRefresh); });
        std::printf("%-40s replot, view %-6s : %8.2f ms (CPU %.2f ms)\n", what, zoom.name, ms, lastCpuMedian);
    }
}

void syntheticSeries(int points, int runs, int width, int height)
{
    QVector<double> keys(points), loss(points), normA(points), normB(points);
    std::mt19937_64 random(1);
    std::normal_distribution<double> noise(0.0, 1.0);
    for (int i = 0; i < points; ++i) {
        keys[i] = i;
        loss[i] = 0.2 + 2.0 * std::exp(-i / 150000.0) + 0.05 * noise(random);
        normA[i] = 1e-3 * std::exp(0.3 * noise(random));
        normB[i] = 1e-4 * std::exp(0.3 * noise(random));
    }

    QCustomPlot plain;
    plain.resize(width, height);
    plain.show();
    QCPGraph* graph = plain.addGraph();
    graph->setPen(QPen(Qt::blue, 0));
    const double setData = medianOf(runs, [&] { graph->setData(keys, loss, true); });
    std::printf("%-40s setData(%d points, sorted): %8.2f ms\n", "QCustomPlot, loss only", points, setData);
    graph->rescaleValueAxis();
    reportReplots("QCustomPlot, loss only", plain, points, runs);

    zkdv::ui::TransactionChart chart;
    chart.resize(width, height);
    chart.show();
    auto container = [&](const QVector<double>& values) {
        auto result = QSharedPointer<QCPGraphDataContainer>::create();
        QVector<QCPGraphData> data(points);
        for (int i = 0; i < points; ++i)
            data[i] = QCPGraphData(keys[i], values[i]);
        result->set(data, true);
        return result;
    };
    const auto lossData = container(loss);
    const QVector<QSharedPointer<QCPGraphDataContainer>> norms = {container(normA), container(normB)};
    const double share = medianOf(runs, [&] { chart.setSeries(lossData, {"weight", "bias"}, 2, norms); });
    std::printf("%-40s setSeries (shared, with rescale): %8.2f ms\n", "TransactionChart", share);
    std::vector<zkdv::VerdictPoint> verdicts;
    for (int i = 0; i < points; i += 100) {
        zkdv::VerdictPoint point;
        point.index = static_cast<std::uint64_t>(i);
        point.verdict = static_cast<zkdv::Verdict>((i / 100) % 4);
        verdicts.push_back(point);
    }
    const double markers = medianOf(runs, [&] { chart.setVerdicts(verdicts); });
    std::printf("%-40s setVerdicts(%zu markers): %8.2f ms\n", "TransactionChart", verdicts.size(), markers);
    reportReplots("TransactionChart, loss+2 norms+markers", chart, points, runs);
    // What each layer costs: the loss alone, then with the norms.
    chart.setVerdicts({});
    chart.setSeries(lossData, {}, 0, {});
    reportReplots("TransactionChart, loss only", chart, points, runs);
    chart.setSeries(lossData, {"weight", "bias"}, 2, norms);
    reportReplots("TransactionChart, loss+2 norms", chart, points, runs);
}

void caseSeries(const std::string& dir, std::uint64_t steps)
{
    namespace fs = std::filesystem;
    fs::create_directories(dir);
    const std::string tape = dir + "/charts-" + std::to_string(steps) + ".zkdv";
    const std::string casePath = dir + "/charts-" + std::to_string(steps) + ".zkaudit";
    if (!fs::exists(casePath)) {
        // The tape is written under a temporary name, so one left behind is complete.
        if (!fs::exists(tape)) {
            zkdv::SyntheticDemoOptions options;
            options.steps = steps;
            options.overwrite = true;
            std::printf("writing %s ...\n", tape.c_str());
            const double write = milliseconds([&] { zkdv::writeSyntheticDemoTape(tape + ".part", options); });
            fs::rename(tape + ".part", tape);
            std::printf("tape written in %.1f s\n", write / 1000);
        }
        const std::string partial = dir + "/charts-building.zkaudit";
        fs::remove(partial);
        {
            zkdv::CaseStore store(partial, zkdv::CaseStore::Access::ReadWrite);
            const double ingest = milliseconds([&] { store.ingestTape(tape); });
            std::printf("tape ingested in %.1f s\n", ingest / 1000);
        }  // closed: the last connection checkpoints the WAL into the file before it is renamed
        fs::rename(partial, casePath);
    }
    zkdv::Database db(casePath, zkdv::Database::Mode::ReadOnly);
    const std::int64_t tapeId = db.queryInt64("SELECT min(id) FROM tapes").value_or(1);
    std::size_t rows = 0;
    const double series = medianOf(3, [&] { rows = zkdv::loadTransactionSeries(db, tapeId, 16).indexes.size(); });
    std::printf("%-40s %zu transactions: %8.1f ms\n", "loadTransactionSeries", rows, series);
    const double read = medianOf(3, [&] {
        zkdv::ui::ChartData::read(QString::fromStdString(casePath), tapeId, 0, zkdv::ui::ChartData::Series, nullptr);
    });
    std::printf("%-40s %8.1f ms\n", "ChartData::read (series, containers)", read);

    zkdv::ui::ChartPanel panel;
    panel.resize(1200, 700);
    panel.show();
    double longestStall = 0;  // the GUI thread's longest gap between timer ticks while loading
    const double load = medianOf(3, [&] {
        QEventLoop loop;
        QObject::connect(&panel, &zkdv::ui::ChartPanel::loaded, &loop, &QEventLoop::quit);
        QElapsedTimer tick;
        tick.start();
        QTimer heartbeat;
        QObject::connect(&heartbeat, &QTimer::timeout, [&] {
            longestStall = std::max(longestStall, double(tick.restart()));
        });
        heartbeat.start(5);
        panel.setCase(QString(), 0);
        panel.setCase(QString::fromStdString(casePath), tapeId);
        loop.exec();
    });
    std::printf("%-40s %8.1f ms (longest GUI stall %.0f ms, %d points)\n", "ChartPanel::setCase until loaded()", load,
                longestStall, panel.lossPointCount());
    panel.lossPlot()->replot(QCustomPlot::rpImmediateRefresh);
    const double replot = medianOf(10, [&] { panel.lossPlot()->replot(QCustomPlot::rpImmediateRefresh); });
    std::printf("%-40s %8.2f ms\n", "ChartPanel loss tab replot (from case)", replot);
}

}  // namespace

int main(int argc, char** argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    int points = 1000000, runs = 10, width = 1200, height = 600;
    std::uint64_t steps = 1000000;
    std::string dir;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--points")
            points = std::max(2, std::stoi(argv[i + 1]));
        else if (flag == "--runs")
            runs = std::max(1, std::stoi(argv[i + 1]));
        else if (flag == "--width")
            width = std::stoi(argv[i + 1]);
        else if (flag == "--height")
            height = std::stoi(argv[i + 1]);
        else if (flag == "--dir")
            dir = argv[i + 1];
        else if (flag == "--steps")
            steps = std::stoull(argv[i + 1]);
    }
    std::printf("platform %s, %d x %d, median of %d\n", qPrintable(QGuiApplication::platformName()), width, height, runs);
    syntheticSeries(points, runs, width, height);
    if (!dir.empty())
        caseSeries(dir, steps);
    return 0;
}
