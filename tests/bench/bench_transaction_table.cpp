// Benchmark: the workstation's transaction table on a case with a million transactions.
//
//   bench_transaction_table [--dir DIR] [--steps N] [--runs R]
//
// Builds (once, cached in DIR) a case with N transactions (default 1,000,000) from a
// synthetic demo tape, ingested as `zkdv-audit ingest` does, plus one replay run with
// verdicts for every 100th transaction (1 in 10 of them diverged). Then, each on a fresh
// model (its own read-only connection, nothing cached but the OS page cache), prints the
// median of R runs (default 5) of: opening the case and showing the first rows, jumping to
// the last rows, sorting by a column, filtering, and finding a transaction's row.

#include <QCoreApplication>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "models/transaction_table_model.h"
#include "zkdv/audit/run_status.h"
#include "zkdv/audit/replay_outcome.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/replay_store.h"

namespace {

using Model = zkdv::ui::TransactionTableModel;

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

// What a view reads for one screen: every column of `rows` rows from `first`.
void readScreen(const Model& model, int first, int rows = 40)
{
    for (int row = std::max(0, first); row < std::min(model.rowCount(), first + rows); ++row) {
        for (int column = 0; column < Model::ColumnCount; ++column)
            (void)model.data(model.index(row, column));
    }
}

std::string buildCase(const std::string& dir, std::uint64_t steps)
{
    const std::string casePath = dir + "/table-" + std::to_string(steps) + ".zkaudit";
    if (std::filesystem::exists(casePath))
        return casePath;
    std::filesystem::create_directories(dir);
    const std::string tape = dir + "/table-" + std::to_string(steps) + ".zkdv";
    zkdv::SyntheticDemoOptions options;
    options.steps = steps;
    options.batchSize = 4;  // the table never reads batches: keep the tape small
    options.features = 4;
    options.classes = 3;
    options.overwrite = true;
    std::printf("building %s ...\n", casePath.c_str());
    std::fflush(stdout);
    double ms = milliseconds([&] { zkdv::writeSyntheticDemoTape(tape, options); });
    std::printf("  synthetic tape of %llu steps: %.1f s\n", static_cast<unsigned long long>(steps), ms / 1000);
    const std::string partial = casePath + ".partial";
    std::filesystem::remove(partial);
    {
        zkdv::CaseStore store(partial, zkdv::CaseStore::Access::ReadWrite);
        std::int64_t tapeId = 0;
        ms = milliseconds([&] { tapeId = store.ingestTape(tape).tapeId; });
        std::printf("  ingest (sort orders stored): %.1f s\n", ms / 1000);
        zkdv::ReplayStore replays(store.database());
        zkdv::ReplayRunInfo info;
        info.tapeId = tapeId;
        info.device = "cpu";
        info.selection = "ids:bench";
        const std::int64_t run = replays.beginRun(info);
        std::vector<zkdv::TransactionOutcome> outcomes;
        for (std::uint64_t index = 0; index < steps; index += 100) {
            zkdv::TransactionOutcome outcome;
            outcome.index = index;
            outcome.segment = index / 12;
            outcome.verdict = (index / 100) % 10 == 7 ? zkdv::Verdict::Diverged : zkdv::Verdict::Exact;
            zkdv::TensorComparison comparison;
            comparison.tensor = (index / 100) % 2 ? "weight" : "bias";
            comparison.slot = "delta";
            comparison.verdict = outcome.verdict;
            comparison.metrics.maxUlp = outcome.verdict == zkdv::Verdict::Diverged ? double(index % 40000) : 0.0;
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

}  // namespace

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    std::string dir = "bench-data";
    std::uint64_t steps = 1000000;
    int runs = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--dir")
            dir = argv[i + 1];
        else if (flag == "--steps")
            steps = std::stoull(argv[i + 1]);
        else if (flag == "--runs")
            runs = std::max(1, std::stoi(argv[i + 1]));
    }
    const QString casePath = QString::fromStdString(buildCase(dir, steps));
    std::printf("case %s: %.1f MB\n", qPrintable(casePath), double(std::filesystem::file_size(casePath.toStdString())) / 1e6);

    int problems = 0;
    // Each measurement: a fresh model opened on the case, `prepare` untimed, `work` timed.
    const auto measure = [&](const char* what, const std::function<void(Model&)>& prepare, const std::function<void(Model&)>& work) {
        std::vector<double> times;
        for (int run = 0; run < runs; ++run) {
            Model model;
            QObject::connect(&model, &Model::problem, [&](const QString& message) {
                ++problems;
                std::fprintf(stderr, "problem: %s\n", qPrintable(message));
            });
            if (prepare) {
                model.setCase(casePath, 1);
                prepare(model);
            }
            times.push_back(milliseconds([&] { work(model); }));
        }
        std::printf("%-58s %9.1f ms\n", what, median(times));
        std::fflush(stdout);
    };
    const auto open = [&](Model&) {};

    measure("open: setCase + first screen", nullptr, [&](Model& model) {
        model.setCase(casePath, 1);
        readScreen(model, 0);
    });
    measure("jump to end: last screen (index order)", open, [](Model& model) { readScreen(model, model.rowCount() - 40); });
    measure("sort by loss ascending + first screen", open, [](Model& model) {
        model.sort(Model::LossColumn, Qt::AscendingOrder);
        readScreen(model, 0);
    });
    measure("sort by loss descending + first screen", open, [](Model& model) {
        model.sort(Model::LossColumn, Qt::DescendingOrder);
        readScreen(model, 0);
    });
    measure("re-sort by loss descending after ascending", [](Model& model) { model.sort(Model::LossColumn, Qt::AscendingOrder); },
            [](Model& model) {
                model.sort(Model::LossColumn, Qt::DescendingOrder);
                readScreen(model, 0);
            });
    measure("sort by loss ascending + a screen in the middle", open, [](Model& model) {
        model.sort(Model::LossColumn, Qt::AscendingOrder);
        readScreen(model, model.rowCount() / 2);
    });
    measure("jump to end sorted by loss: last screen",
            [](Model& model) {
                model.sort(Model::LossColumn, Qt::AscendingOrder);
                readScreen(model, 0);
            },
            [](Model& model) { readScreen(model, model.rowCount() - 40); });
    measure("sort by update norm ascending + first screen", open, [](Model& model) {
        model.sort(Model::UpdateNormColumn, Qt::AscendingOrder);
        readScreen(model, 0);
    });
    measure("sort by lr descending + first screen", open, [](Model& model) {
        model.sort(Model::LearningRateColumn, Qt::DescendingOrder);
        readScreen(model, 0);
    });
    measure("sort by sampled checks descending + first screen", open, [](Model& model) {
        model.sort(Model::SampledChecksColumn, Qt::DescendingOrder);
        readScreen(model, 0);
    });
    measure("sort by verdict descending + first screen", open, [](Model& model) {
        model.sort(Model::VerdictColumn, Qt::DescendingOrder);
        readScreen(model, 0);
    });
    measure("sort by worst divergence descending + first screen", open, [](Model& model) {
        model.sort(Model::WorstDivergenceColumn, Qt::DescendingOrder);
        readScreen(model, 0);
    });
    measure("filter diverged + first screen", open, [](Model& model) {
        model.setQuickFilter(Model::QuickFilter::Diverged);
        readScreen(model, 0);
    });
    measure("filter not replayed + last screen", open, [](Model& model) {
        model.setQuickFilter(Model::QuickFilter::NotReplayed);
        readScreen(model, model.rowCount() - 40);
    });
    measure("filter sampled checks + first screen", open, [](Model& model) {
        model.setQuickFilter(Model::QuickFilter::SampledChecks);
        readScreen(model, 0);
    });
    measure("filter top-q 10 + first screen", open, [](Model& model) {
        model.setQuickFilter(Model::QuickFilter::TopQ, 10);
        readScreen(model, 0);
    });
    measure("text filter \"400000-400999\" + first screen", open, [](Model& model) {
        model.setTextFilter(QStringLiteral("400000-400999"));
        readScreen(model, 0);
    });
    measure("text filter \"weight\" + first screen", open, [](Model& model) {
        model.setTextFilter(QStringLiteral("weight"));
        readScreen(model, 0);
    });
    measure("rowOfTransaction x10, sorted by loss (order read before)",
            [](Model& model) {
                model.sort(Model::LossColumn, Qt::AscendingOrder);
                (void)model.rowOfTransaction(0);
            },
            [&](Model& model) {
                for (std::uint64_t i = 0; i < 10; ++i)
                    (void)model.rowOfTransaction((i * 104729) % steps);
            });
    measure("refresh (index order) + first screen", open, [](Model& model) {
        model.refresh();
        readScreen(model, 0);
    });
    measure("refresh sorted by verdict + first screen", [](Model& model) { model.sort(Model::VerdictColumn, Qt::AscendingOrder); },
            [](Model& model) {
                model.refresh();
                readScreen(model, 0);
            });
    return problems == 0 ? 0 : 1;
}
