// The workstation's transaction table model against SQL computed independently on the
// same case: counts under each filter, sort orders, window fetching, text filter forms,
// verdict formatting, selection across sort and refresh, and SQLite errors.

#include <QAbstractItemModelTester>
#include <QBrush>
#include <QItemSelectionModel>
#include <QSignalSpy>
#include <QtTest>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "models/transaction_table_model.h"
#include "temp_dir.h"
#include "zkdv/audit/replay_outcome.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/transaction_table.h"

using namespace zkdv;
using zkdv::ui::TransactionTableModel;
using Model = TransactionTableModel;
using IndexList = std::vector<quint64>;

Q_DECLARE_METATYPE(TransactionTableModel::QuickFilter)

namespace {

constexpr std::uint64_t kSteps = 700;  // nearly three windows of 256 rows

TransactionOutcome outcome(std::uint64_t index, Verdict verdict, const std::string& tensor, double maxUlp, double relativeL2)
{
    TransactionOutcome result;
    result.index = index;
    result.segment = index / 12;
    result.verdict = verdict;
    result.detail = "test";
    if (!tensor.empty()) {
        TensorComparison comparison;
        comparison.tensor = tensor;
        comparison.slot = "delta";
        comparison.verdict = verdict;
        comparison.metrics.maxUlp = maxUlp;
        comparison.metrics.relativeL2 = relativeL2;
        result.comparisons.push_back(comparison);
    }
    return result;
}

std::int64_t storeRun(Database& db, std::int64_t tapeId, const std::vector<TransactionOutcome>& outcomes)
{
    ReplayStore store(db);
    ReplayRunInfo info;
    info.tapeId = tapeId;
    info.device = "cpu";
    info.selection = "ids:test";
    const std::int64_t run = store.beginRun(info);
    store.storeOutcomes(run, outcomes);
    store.finishRun(run, RunStatus::Finished, "");
    return run;
}

// Every transaction the model shows, in row order.
IndexList shown(const Model& model)
{
    IndexList result;
    for (int row = 0; row < model.rowCount(); ++row)
        result.push_back(model.transactionAt(row));
    return result;
}

// The same list read through data(), window by window, as a view would.
IndexList shownThroughData(const Model& model)
{
    IndexList result;
    for (int row = 0; row < model.rowCount(); ++row)
        result.push_back(model.data(model.index(row, Model::IndexColumn), Model::TransactionIndexRole).toULongLong());
    return result;
}

}  // namespace

class TestTransactionModel : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void emptyPathShowsNoRows();
    void unreadableCaseReportsAProblem();
    void windowsAreFetchedOnDemand();
    void cellsAreFormatted();
    void sortMatchesSql_data();
    void sortMatchesSql();
    void quickFiltersMatchSql_data();
    void quickFiltersMatchSql();
    void topQMatchesFingerprints();
    void textFilterForms_data();
    void textFilterForms();
    void filterAndSortCombine();
    void rowOfTransactionRoundTrips();
    void runSelection();
    void everyRunKeepsEarlierResults();
    void rowsArriveFromTheLoaderThread();
    void withinToleranceSaysWhichBound();
    void selectionFollowsSortAndRefresh();
    void refreshSeesNewVerdicts();
    void unstoredOrdersAndGapsStillSort();
    void storedOrdersOfALongTape();
    void sqliteErrorsDoNotCrash();

private:
    IndexList sql(const std::string& query, std::int64_t runId = 0);
    std::string copyCase(const std::string& name);

    test::TempDir dir_;
    std::string casePath_;
    std::int64_t tapeId_ = 0;
    std::int64_t oldRun_ = 0;
    std::int64_t newRun_ = 0;
};

void TestTransactionModel::initTestCase()
{
    const std::string tape = dir_.file("table.zkdv");
    SyntheticDemoOptions options;
    options.steps = kSteps;
    options.features = 4;
    options.classes = 3;
    options.updateCheckProbability = 0.05;
    options.stateCheckProbability = 0.05;
    options.overwrite = true;
    writeSyntheticDemoTape(tape, options);

    casePath_ = dir_.file("table.zkaudit");
    CaseStore store(casePath_, CaseStore::Access::ReadWrite);
    tapeId_ = store.ingestTape(tape).tapeId;

    // An older run over 0..79 with every verdict and both tensors, and a newer one.
    std::vector<TransactionOutcome> old;
    const Verdict verdicts[] = {Verdict::Exact, Verdict::WithinTolerance, Verdict::Diverged, Verdict::Unverifiable};
    for (std::uint64_t i = 0; i < 80; ++i) {
        const Verdict verdict = verdicts[i % 4];
        const bool noComparison = verdict == Verdict::Unverifiable && i % 8 == 3;
        old.push_back(outcome(i, verdict, noComparison ? "" : (i % 3 == 0 ? "fc.weight" : "fc.bias"),
                              double((i * 7919) % 50000), 1e-6 * double(i)));
    }
    old[10] = outcome(10, Verdict::Diverged, "fc.weight", 32000, 2.5e-3);
    oldRun_ = storeRun(store.database(), tapeId_, old);
    std::vector<TransactionOutcome> fresh;
    for (std::uint64_t i = 300; i < 340; ++i)
        fresh.push_back(outcome(i, i % 5 == 0 ? Verdict::Diverged : Verdict::Exact, "fc.bias", double(i % 5), 0));
    newRun_ = storeRun(store.database(), tapeId_, fresh);
}

IndexList TestTransactionModel::sql(const std::string& query, std::int64_t runId)
{
    Database db(casePath_, Database::Mode::ReadOnly);
    Statement rows = db.prepare(query);
    rows.bind(1, tapeId_);
    if (query.find("?2") != std::string::npos)
        rows.bind(2, runId);
    IndexList result;
    while (rows.step())
        result.push_back(static_cast<quint64>(rows.int64(0)));
    return result;
}

std::string TestTransactionModel::copyCase(const std::string& name)
{
    const std::string path = dir_.file(name);
    std::filesystem::copy_file(casePath_, path, std::filesystem::copy_options::overwrite_existing);
    return path;
}

void TestTransactionModel::emptyPathShowsNoRows()
{
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy problems(&model, &Model::problem);
    model.setCase(QString(), 0);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.columnCount(), int(Model::ColumnCount));
    model.sort(Model::LossColumn, Qt::DescendingOrder);
    model.setQuickFilter(Model::QuickFilter::Diverged);
    model.refresh();
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.rowOfTransaction(0), -1);
    QCOMPARE(problems.count(), 0);
    QCOMPARE(model.headerData(Model::VerdictColumn, Qt::Horizontal).toString(), QStringLiteral("Replay verdict"));
}

void TestTransactionModel::unreadableCaseReportsAProblem()
{
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy problems(&model, &Model::problem);
    model.setCase(QString::fromStdString(dir_.file("missing.zkaudit")), 1);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(problems.count(), 1);

    model.setCase(QString::fromStdString(casePath_), tapeId_ + 41);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(problems.count(), 2);
    QVERIFY2(problems.last().first().toString().contains(QStringLiteral("no tape")), qPrintable(problems.last().first().toString()));

    model.setCase(QString::fromStdString(casePath_), tapeId_);
    QCOMPARE(model.rowCount(), int(kSteps));
    QCOMPARE(problems.count(), 2);
}

void TestTransactionModel::windowsAreFetchedOnDemand()
{
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setCase(QString::fromStdString(casePath_), tapeId_);
    QCOMPARE(model.rowCount(), int(sql("SELECT count(*) FROM transactions WHERE tape_id = ?1").front()));

    // The last row first, as a view does after "jump to end", then rows around window edges.
    const int last = model.rowCount() - 1;
    QCOMPARE(model.data(model.index(last, Model::IndexColumn)).toString(), QString::number(last));
    Database db(casePath_, Database::Mode::ReadOnly);
    Statement loss = db.prepare("SELECT loss, segment FROM transactions WHERE tape_id = ?1 AND idx = ?2");
    for (int row : {last, 0, 255, 256, 511, 512, 300, last - 1}) {
        loss.reset();
        loss.bind(1, tapeId_).bind(2, row);
        QVERIFY(loss.step());
        QCOMPARE(model.data(model.index(row, Model::IndexColumn)).toString(), QString::number(row));
        QCOMPARE(model.data(model.index(row, Model::LossColumn)).toString(), QString::number(loss.real(0), 'g', 6));
        QCOMPARE(model.data(model.index(row, Model::SegmentColumn)).toString(), QString::number(loss.int64(1)));
    }
    QCOMPARE(shownThroughData(model), sql("SELECT idx FROM transactions WHERE tape_id = ?1 ORDER BY idx"));
}

void TestTransactionModel::cellsAreFormatted()
{
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setCase(QString::fromStdString(casePath_), tapeId_);
    model.setRun(oldRun_);
    QCOMPARE(model.runId(), oldRun_);

    const int diverged = model.rowOfTransaction(10);
    QCOMPARE(model.data(model.index(diverged, Model::VerdictColumn)).toString(), QStringLiteral("diverged"));
    QCOMPARE(model.data(model.index(diverged, Model::WorstDivergenceColumn)).toString(), QStringLiteral("fc.weight delta: 3.2e+04 ULP"));
    const QString tip = model.data(model.index(diverged, Model::WorstDivergenceColumn), Qt::ToolTipRole).toString();
    QVERIFY2(tip.contains(QStringLiteral("relative L2")) && tip.contains(QStringLiteral("0.0025")), qPrintable(tip));

    const auto foreground = [&](quint64 transaction) {
        return model.data(model.index(model.rowOfTransaction(transaction), Model::VerdictColumn), Qt::ForegroundRole).value<QBrush>().color();
    };
    const QColor exact = foreground(0), within = foreground(1), red = foreground(2), grey = foreground(3);
    QVERIFY(exact.green() > exact.red());                       // green
    QVERIFY(within.red() > within.blue() && within.green() > within.blue());  // amber
    QVERIFY(red.red() > red.green() && red.red() > red.blue());  // red
    QVERIFY(grey.red() == grey.green() && grey.green() == grey.blue());  // grey
    QVERIFY(model.data(model.index(model.rowOfTransaction(2), Model::VerdictColumn), Qt::BackgroundRole).value<QBrush>().style()
            != Qt::NoBrush);
    // Not replayed: empty, uncoloured.
    QCOMPARE(model.data(model.index(model.rowOfTransaction(500), Model::VerdictColumn)).toString(), QString());
    QVERIFY(!model.data(model.index(model.rowOfTransaction(500), Model::VerdictColumn), Qt::ForegroundRole).isValid());
    // Unverifiable without any comparison: no worst divergence.
    QCOMPARE(model.data(model.index(model.rowOfTransaction(3), Model::WorstDivergenceColumn)).toString(), QString());

    Database db(casePath_, Database::Mode::ReadOnly);
    Statement checks = db.prepare("SELECT idx, has_deltas, has_state_digest, lr, update_norm FROM transactions WHERE tape_id = ?1");
    checks.bind(1, tapeId_);
    int withDeltas = 0;
    while (checks.step()) {
        const int row = model.rowOfTransaction(static_cast<quint64>(checks.int64(0)));
        const bool deltas = checks.int64(1) != 0, digest = checks.int64(2) != 0;
        const QString expected = deltas && digest ? QStringLiteral("deltas, digest")
            : deltas                              ? QStringLiteral("deltas")
            : digest                              ? QStringLiteral("digest")
                                                  : QString();
        QCOMPARE(model.data(model.index(row, Model::SampledChecksColumn)).toString(), expected);
        QCOMPARE(model.data(model.index(row, Model::UpdateNormColumn)).toString(), QString::number(checks.real(4), 'g', 4));
        QCOMPARE(model.data(model.index(row, Model::LearningRateColumn)).toString(),
                 checks.isNull(3) ? QString() : QString::number(checks.real(3), 'g', 4));
        withDeltas += deltas ? 1 : 0;
    }
    QVERIFY(withDeltas > 5);
}

void TestTransactionModel::sortMatchesSql_data()
{
    QTest::addColumn<int>("column");
    QTest::addColumn<QByteArray>("orderBy");  // ascending; descending is its reverse
    const std::string verdictJoin = " FROM transactions t LEFT JOIN verdicts v ON v.run_id = ?2 AND v.idx = t.idx WHERE t.tape_id = ?1";
    QTest::newRow("index") << int(Model::IndexColumn) << QByteArray("SELECT idx FROM transactions WHERE tape_id = ?1 ORDER BY idx");
    QTest::newRow("loss") << int(Model::LossColumn) << QByteArray("SELECT idx FROM transactions WHERE tape_id = ?1 ORDER BY loss, idx");
    QTest::newRow("lr") << int(Model::LearningRateColumn) << QByteArray("SELECT idx FROM transactions WHERE tape_id = ?1 ORDER BY lr, idx");
    QTest::newRow("update norm") << int(Model::UpdateNormColumn)
                                 << QByteArray("SELECT idx FROM transactions WHERE tape_id = ?1 ORDER BY update_norm, idx");
    QTest::newRow("sampled checks")
        << int(Model::SampledChecksColumn)
        << QByteArray("SELECT idx FROM transactions WHERE tape_id = ?1 ORDER BY has_deltas * 2 + has_state_digest, idx");
    QTest::newRow("segment") << int(Model::SegmentColumn) << QByteArray("SELECT idx FROM transactions WHERE tape_id = ?1 ORDER BY segment, idx");
    QTest::newRow("verdict") << int(Model::VerdictColumn)
                             << QByteArray::fromStdString("SELECT t.idx" + verdictJoin
                                                       + " ORDER BY CASE v.verdict WHEN 'exact' THEN 1 WHEN 'within-tolerance' THEN 2"
                                                         " WHEN 'diverged' THEN 3 WHEN 'unverifiable' THEN 4 ELSE 0 END, t.idx");
    QTest::newRow("worst divergence") << int(Model::WorstDivergenceColumn)
                                      << QByteArray::fromStdString("SELECT t.idx" + verdictJoin + " ORDER BY v.verdict IS NOT NULL, v.worst_max_ulp, t.idx");
}

void TestTransactionModel::sortMatchesSql()
{
    QFETCH(int, column);
    QFETCH(QByteArray, orderBy);
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setCase(QString::fromStdString(casePath_), tapeId_);
    model.setRun(oldRun_);
    const IndexList ascending = sql(orderBy.toStdString(), oldRun_);
    QCOMPARE(ascending.size(), std::size_t(kSteps));

    model.sort(column, Qt::AscendingOrder);
    QCOMPARE(shown(model), ascending);
    QCOMPARE(shownThroughData(model), ascending);
    model.sort(column, Qt::DescendingOrder);
    QCOMPARE(shown(model), IndexList(ascending.rbegin(), ascending.rend()));
    QCOMPARE(shownThroughData(model), IndexList(ascending.rbegin(), ascending.rend()));
}

void TestTransactionModel::quickFiltersMatchSql_data()
{
    QTest::addColumn<Model::QuickFilter>("filter");
    QTest::addColumn<QByteArray>("query");
    QTest::newRow("all") << Model::QuickFilter::All << QByteArray("SELECT idx FROM transactions WHERE tape_id = ?1 ORDER BY idx");
    QTest::newRow("diverged") << Model::QuickFilter::Diverged
                              << QByteArray("SELECT idx FROM verdicts WHERE run_id = ?2 AND verdict = 'diverged' AND ?1 > 0 ORDER BY idx");
    QTest::newRow("not replayed")
        << Model::QuickFilter::NotReplayed
        << QByteArray("SELECT idx FROM transactions t WHERE tape_id = ?1 AND NOT EXISTS"
                       " (SELECT 1 FROM verdicts v WHERE v.run_id = ?2 AND v.idx = t.idx) ORDER BY idx");
    QTest::newRow("sampled checks")
        << Model::QuickFilter::SampledChecks
        << QByteArray("SELECT idx FROM transactions WHERE tape_id = ?1 AND (has_deltas = 1 OR has_state_digest = 1) ORDER BY idx");
}

void TestTransactionModel::quickFiltersMatchSql()
{
    QFETCH(Model::QuickFilter, filter);
    QFETCH(QByteArray, query);
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setCase(QString::fromStdString(casePath_), tapeId_);
    for (std::int64_t run : {oldRun_, newRun_}) {
        model.setRun(run);
        model.setQuickFilter(filter);
        const IndexList expected = sql(query.toStdString(), run);
        QVERIFY(!expected.empty());
        QCOMPARE(model.rowCount(), int(expected.size()));
        QCOMPARE(shownThroughData(model), expected);
        model.setQuickFilter(Model::QuickFilter::All);
        QCOMPARE(model.rowCount(), int(kSteps));
    }
}

void TestTransactionModel::topQMatchesFingerprints()
{
    // Computed here from the raw fingerprints: per parameter, the q largest L2 (ties to the
    // lower index), united.
    std::vector<std::vector<std::pair<double, quint64>>> perParameter;
    {
        Database db(casePath_, Database::Mode::ReadOnly);
        Statement rows = db.prepare("SELECT idx, fingerprints FROM transactions WHERE tape_id = ?1 ORDER BY idx");
        rows.bind(1, tapeId_);
        while (rows.step()) {
            const ByteSpan blob = rows.blob(1);
            const std::size_t parameters = blob.size / 16;
            perParameter.resize(std::max(perParameter.size(), parameters));
            for (std::size_t p = 0; p < parameters; ++p) {
                double l2;
                std::memcpy(&l2, blob.data + 16 * p, sizeof l2);
                perParameter[p].emplace_back(l2, static_cast<quint64>(rows.int64(0)));
            }
        }
    }
    QVERIFY(perParameter.size() >= 2);
    for (int q : {1, 3, 25}) {
        std::set<quint64> chosen;
        for (auto entries : perParameter) {
            std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
                return a.first > b.first || (a.first == b.first && a.second < b.second);
            });
            for (int i = 0; i < q && i < int(entries.size()); ++i)
                chosen.insert(entries[std::size_t(i)].second);
        }
        Model model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setQuickFilter(Model::QuickFilter::TopQ, q);
        model.setCase(QString::fromStdString(casePath_), tapeId_);
        QCOMPARE(shown(model), IndexList(chosen.begin(), chosen.end()));
    }
}

void TestTransactionModel::textFilterForms_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QByteArray>("query");
    QTest::newRow("index") << QStringLiteral("17") << QByteArray("SELECT idx FROM transactions WHERE tape_id = ?1 AND idx = 17");
    QTest::newRow("index, spaces") << QStringLiteral("  42 ") << QByteArray("SELECT idx FROM transactions WHERE tape_id = ?1 AND idx = 42");
    QTest::newRow("absent index") << QStringLiteral("99999") << QByteArray("SELECT idx FROM transactions WHERE idx = 99999 AND ?1 > 0");
    QTest::newRow("range") << QStringLiteral("250-270")
                           << QByteArray("SELECT idx FROM transactions WHERE tape_id = ?1 AND idx BETWEEN 250 AND 270 ORDER BY idx");
    QTest::newRow("range, reversed, spaces") << QStringLiteral("690 - 650")
                                             << QByteArray("SELECT idx FROM transactions WHERE tape_id = ?1 AND idx BETWEEN 650 AND 690 ORDER BY idx");
    QTest::newRow("verdict") << QStringLiteral("Diverged")
                             << QByteArray("SELECT idx FROM verdicts WHERE run_id = ?2 AND verdict = 'diverged' AND ?1 > 0 ORDER BY idx");
    QTest::newRow("verdict part") << QStringLiteral("toler")
                                  << QByteArray("SELECT idx FROM verdicts WHERE run_id = ?2 AND verdict = 'within-tolerance' AND ?1 > 0 ORDER BY idx");
    QTest::newRow("tensor") << QStringLiteral("FC.WEIGHT")
                            << QByteArray("SELECT idx FROM verdicts WHERE run_id = ?2 AND worst_tensor = 'fc.weight' AND ?1 > 0 ORDER BY idx");
    QTest::newRow("nothing") << QStringLiteral("no-such-thing") << QByteArray("SELECT idx FROM verdicts WHERE run_id = ?2 AND ?1 < 0");
}

void TestTransactionModel::textFilterForms()
{
    QFETCH(QString, text);
    QFETCH(QByteArray, query);
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setCase(QString::fromStdString(casePath_), tapeId_);
    model.setRun(oldRun_);
    model.setTextFilter(text);
    QCOMPARE(shownThroughData(model), sql(query.toStdString(), oldRun_));
    model.setTextFilter(QString());
    QCOMPARE(model.rowCount(), int(kSteps));
}

void TestTransactionModel::filterAndSortCombine()
{
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setCase(QString::fromStdString(casePath_), tapeId_);
    model.setRun(oldRun_);
    model.sort(Model::WorstDivergenceColumn, Qt::DescendingOrder);
    model.setQuickFilter(Model::QuickFilter::Diverged);
    model.setTextFilter(QStringLiteral("bias"));
    IndexList expected = sql("SELECT idx FROM verdicts WHERE run_id = ?2 AND verdict = 'diverged' AND worst_tensor = 'fc.bias'"
                             " AND ?1 > 0 ORDER BY worst_max_ulp DESC, idx DESC",
                             oldRun_);
    QVERIFY(expected.size() > 3);
    QCOMPARE(shownThroughData(model), expected);

    model.setQuickFilter(Model::QuickFilter::SampledChecks);
    model.setTextFilter(QStringLiteral("100-400"));
    model.sort(Model::LossColumn, Qt::AscendingOrder);
    expected = sql("SELECT idx FROM transactions WHERE tape_id = ?1 AND (has_deltas OR has_state_digest) AND idx BETWEEN 100 AND 400"
                   " ORDER BY loss, idx");
    QVERIFY(!expected.empty());
    QCOMPARE(shownThroughData(model), expected);
}

void TestTransactionModel::rowOfTransactionRoundTrips()
{
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setCase(QString::fromStdString(casePath_), tapeId_);
    model.setRun(oldRun_);
    for (int column : {int(Model::IndexColumn), int(Model::LossColumn), int(Model::VerdictColumn)}) {
        for (Qt::SortOrder order : {Qt::AscendingOrder, Qt::DescendingOrder}) {
            model.sort(column, order);
            for (int row : {0, 1, 255, 256, 400, model.rowCount() - 1}) {
                QCOMPARE(model.rowOfTransaction(model.transactionAt(row)), row);
                QCOMPARE(model.transactionAt(model.rowOfTransaction(quint64(row))), quint64(row));
            }
        }
    }
    QCOMPARE(model.rowOfTransaction(kSteps), -1);
    model.setQuickFilter(Model::QuickFilter::Diverged);
    QCOMPARE(model.rowOfTransaction(0), -1);  // exact in the older run: filtered out
    QVERIFY(model.rowOfTransaction(10) >= 0);
    QCOMPARE(model.transactionAt(model.rowOfTransaction(10)), quint64(10));
}

void TestTransactionModel::runSelection()
{
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setCase(QString::fromStdString(casePath_), tapeId_);
    QCOMPARE(model.runId(), newRun_);  // 0 follows the newest run
    QCOMPARE(model.data(model.index(model.rowOfTransaction(300), Model::VerdictColumn)).toString(), QStringLiteral("diverged"));
    QCOMPARE(model.data(model.index(model.rowOfTransaction(2), Model::VerdictColumn)).toString(), QString());
    model.setRun(oldRun_);
    QCOMPARE(model.runId(), oldRun_);
    QCOMPARE(model.data(model.index(model.rowOfTransaction(300), Model::VerdictColumn)).toString(), QString());
    QCOMPARE(model.data(model.index(model.rowOfTransaction(2), Model::VerdictColumn)).toString(), QStringLiteral("diverged"));
    model.setRun(0);
    QCOMPARE(model.runId(), newRun_);
}

void TestTransactionModel::everyRunKeepsEarlierResults()
{
    const std::string path = copyCase("every-run.zkaudit");
    std::int64_t third = 0;
    {
        CaseStore store(path, CaseStore::Access::ReadWrite);
        // A later, partial run: 2 (diverged in the old run) now exact, 4 exact as before.
        third = storeRun(store.database(), tapeId_, {outcome(2, Verdict::Exact, "fc.bias", 0, 0), outcome(4, Verdict::Exact, "fc.bias", 0, 0)});
    }
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRun(TransactionTable::kEveryRun);
    model.setCase(QString::fromStdString(path), tapeId_);
    QCOMPARE(model.runId(), TransactionTable::kEveryRun);
    const auto verdictText = [&](quint64 index) {
        return model.data(model.index(model.rowOfTransaction(index), Model::VerdictColumn)).toString();
    };
    const auto verdictTip = [&](quint64 index) {
        return model.data(model.index(model.rowOfTransaction(index), Model::VerdictColumn), Qt::ToolTipRole).toString();
    };
    // Results only an earlier run found stay visible, beside the newest run's.
    QCOMPARE(verdictText(10), QStringLiteral("diverged"));
    QVERIFY2(verdictTip(10).contains(QStringLiteral("run %1").arg(oldRun_)), qPrintable(verdictTip(10)));
    QCOMPARE(verdictText(300), QStringLiteral("diverged"));
    QVERIFY(verdictText(299).isEmpty());
    // Replayed by two runs: the newest wins, and the disagreement is marked where it exists.
    QCOMPARE(verdictText(2), QStringLiteral("exact  ≠ runs disagree"));
    QVERIFY2(verdictTip(2).contains(QStringLiteral("run %1").arg(third)) && verdictTip(2).contains(QStringLiteral("newest of 2 runs")),
             qPrintable(verdictTip(2)));
    QCOMPARE(verdictText(4), QStringLiteral("exact"));

    // The filters see the same results.
    model.setQuickFilter(Model::QuickFilter::Diverged);
    IndexList diverged = shown(model);
    QVERIFY(std::find(diverged.begin(), diverged.end(), quint64(10)) != diverged.end());
    QVERIFY(std::find(diverged.begin(), diverged.end(), quint64(300)) != diverged.end());
    QVERIFY(std::find(diverged.begin(), diverged.end(), quint64(2)) == diverged.end());
    model.setQuickFilter(Model::QuickFilter::NotReplayed);
    QCOMPARE(model.rowCount(), int(kSteps - 80 - 40));
    model.setQuickFilter(Model::QuickFilter::All);
    model.setTextFilter(QStringLiteral("disagree"));
    QCOMPARE(shown(model), (IndexList{2}));
    model.setTextFilter(QStringLiteral("run == %1 && verdict == diverged && index < 12").arg(oldRun_));
    QCOMPARE(shown(model), (IndexList{6, 10}));  // 2's shown result is the newer run's
    model.setTextFilter(QStringLiteral("tensor contains bias && index < 5"));
    QCOMPARE(shown(model), (IndexList{1, 2, 4}));
    model.setTextFilter(QString());

    // A run added while the table is open shows on refresh, without hiding the others.
    {
        CaseStore store(path, CaseStore::Access::ReadWrite);
        storeRun(store.database(), tapeId_, {outcome(500, Verdict::Diverged, "fc.weight", 9, 0)});
    }
    model.refresh();
    QCOMPARE(verdictText(500), QStringLiteral("diverged"));
    QCOMPARE(verdictText(10), QStringLiteral("diverged"));
    // One run alone shows only its own results.
    model.setRun(third);
    QCOMPARE(verdictText(2), QStringLiteral("exact"));
    QVERIFY(verdictText(10).isEmpty());
}

void TestTransactionModel::rowsArriveFromTheLoaderThread()
{
    Model reference;
    reference.setRun(oldRun_);
    reference.setCase(QString::fromStdString(casePath_), tapeId_);
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setBackgroundFetch(true);
    model.setRun(oldRun_);
    model.setCase(QString::fromStdString(casePath_), tapeId_);
    model.sort(Model::LossColumn, Qt::DescendingOrder);
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    reference.sort(Model::LossColumn, Qt::DescendingOrder);
    const int row = 600;  // the third window
    // Not cached: the index is there at once, the loss when the loader has read the window.
    QCOMPARE(model.data(model.index(row, Model::IndexColumn)).toString(), QString::number(reference.transactionAt(row)));
    QVERIFY(!model.data(model.index(row, Model::LossColumn)).isValid());
    QVERIFY(model.pendingWindows() >= 1);
    QTRY_VERIFY(model.data(model.index(row, Model::LossColumn)).isValid());
    QVERIFY(!changed.isEmpty());
    QTRY_COMPARE(model.pendingWindows(), 0);
    for (int r = 512; r < 700; ++r)
        for (int column : {int(Model::LossColumn), int(Model::VerdictColumn), int(Model::WorstDivergenceColumn)})
            QCOMPARE(model.data(model.index(r, column)), reference.data(reference.index(r, column)));
    // A window asked for before a re-sort is not shown after it.
    QVERIFY(!model.data(model.index(400, Model::LossColumn)).isValid());
    model.sort(Model::IndexColumn, Qt::AscendingOrder);
    reference.sort(Model::IndexColumn, Qt::AscendingOrder);
    QTRY_VERIFY(model.data(model.index(400, Model::LossColumn)).isValid());
    QCOMPARE(model.data(model.index(400, Model::LossColumn)), reference.data(reference.index(400, Model::LossColumn)));
    // Copy reads now.
    QCOMPARE(model.data(model.index(650, Model::LossColumn), Model::DisplayNowRole), reference.data(reference.index(650, Model::LossColumn)));
}

void TestTransactionModel::withinToleranceSaysWhichBound()
{
    Model model;
    model.setRun(oldRun_);
    model.setCase(QString::fromStdString(casePath_), tapeId_);
    // Transaction 1 is within tolerance in the old run, by ULP distance or relative error.
    const QString text = model.data(model.index(model.rowOfTransaction(1), Model::VerdictColumn)).toString();
    QVERIFY2(text.startsWith(QStringLiteral("within-tolerance (")) &&
                 (text.contains(QStringLiteral("ULP")) || text.contains(QStringLiteral("relative L2"))),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("≤")), qPrintable(text));
}

void TestTransactionModel::selectionFollowsSortAndRefresh()
{
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setCase(QString::fromStdString(casePath_), tapeId_);
    QItemSelectionModel selection(&model);
    const std::set<quint64> picked{5, 123, 257, 699};
    for (quint64 transaction : picked)
        selection.select(model.index(model.rowOfTransaction(transaction), 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
    selection.setCurrentIndex(model.index(model.rowOfTransaction(123), 0), QItemSelectionModel::NoUpdate);

    const auto selected = [&] {
        std::set<quint64> result;
        for (const QModelIndex& index : selection.selectedRows())
            result.insert(model.transactionAt(index.row()));
        return result;
    };
    model.sort(Model::LossColumn, Qt::DescendingOrder);
    QCOMPARE(selected(), picked);
    QCOMPARE(model.transactionAt(selection.currentIndex().row()), quint64(123));
    model.sort(Model::UpdateNormColumn, Qt::AscendingOrder);
    QCOMPARE(selected(), picked);
    model.refresh();
    QCOMPARE(selected(), picked);
    QCOMPARE(model.transactionAt(selection.currentIndex().row()), quint64(123));
}

void TestTransactionModel::refreshSeesNewVerdicts()
{
    const std::string path = copyCase("refresh.zkaudit");
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setCase(QString::fromStdString(path), tapeId_);
    model.sort(Model::VerdictColumn, Qt::DescendingOrder);
    model.setQuickFilter(Model::QuickFilter::Diverged);
    QCOMPARE(model.rowCount(), 8);  // 300, 305, ..., 335 in the newest run

    // A replay writes through its own connection while the model stays open.
    Database writer(path, Database::Mode::ReadWrite);
    ReplayStore store(writer);
    store.storeOutcomes(newRun_, {outcome(600, Verdict::Diverged, "fc.weight", 9, 0), outcome(601, Verdict::Exact, "fc.weight", 0, 0)});
    QCOMPARE(model.rowCount(), 8);
    model.refresh();
    QCOMPARE(model.rowCount(), 9);
    QVERIFY(model.rowOfTransaction(600) >= 0);

    // A new run is followed when the model shows the newest (run 0).
    const std::int64_t third = storeRun(writer, tapeId_, {outcome(1, Verdict::Diverged, "fc.bias", 1, 0)});
    model.refresh();
    QCOMPARE(model.runId(), third);
    QCOMPARE(shown(model), IndexList{1});
    model.setQuickFilter(Model::QuickFilter::All);
    QCOMPARE(model.transactionAt(0), quint64(1));  // still sorted by verdict, descending
}

void TestTransactionModel::unstoredOrdersAndGapsStillSort()
{
    // A tape without stored sort orders (ingested before schema version 4) whose rows have
    // gaps, and one whose stored orders no longer match its rows: every path that sorts in
    // memory and without contiguous indexes.
    const std::string path = copyCase("gaps.zkaudit");
    {
        Database db(path, Database::Mode::ReadWrite);
        db.exec("DELETE FROM transaction_orders WHERE column_name = 'loss';"
                "DELETE FROM transactions WHERE idx % 7 = 3 OR idx < 2;");
    }
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setCase(QString::fromStdString(path), tapeId_);
    model.setRun(oldRun_);
    Database db(path, Database::Mode::ReadOnly);
    const auto query = [&](const std::string& text) {
        Statement rows = db.prepare(text);
        rows.bind(1, tapeId_).bind(2, oldRun_);
        IndexList result;
        while (rows.step())
            result.push_back(static_cast<quint64>(rows.int64(0)));
        return result;
    };
    const IndexList all = query("SELECT idx FROM transactions WHERE tape_id = ?1 AND ?2 > 0 ORDER BY idx");
    QCOMPARE(shownThroughData(model), all);
    model.sort(Model::LossColumn, Qt::DescendingOrder);
    IndexList byLoss = query("SELECT idx FROM transactions WHERE tape_id = ?1 AND ?2 > 0 ORDER BY loss, idx");
    QCOMPARE(shownThroughData(model), IndexList(byLoss.rbegin(), byLoss.rend()));
    model.setQuickFilter(Model::QuickFilter::NotReplayed);
    IndexList notReplayed = query("SELECT idx FROM transactions t WHERE tape_id = ?1 AND NOT EXISTS"
                                  " (SELECT 1 FROM verdicts v WHERE v.run_id = ?2 AND v.idx = t.idx) ORDER BY loss DESC, idx DESC");
    QCOMPARE(shownThroughData(model), notReplayed);
    model.setQuickFilter(Model::QuickFilter::All);
    model.setTextFilter(QStringLiteral("0-20"));
    model.sort(Model::IndexColumn, Qt::AscendingOrder);
    QCOMPARE(shown(model), query("SELECT idx FROM transactions WHERE tape_id = ?1 AND ?2 > 0 AND idx <= 20 ORDER BY idx"));
    QCOMPARE(model.rowOfTransaction(3), -1);
    QCOMPARE(model.transactionAt(model.rowOfTransaction(4)), quint64(4));
}

void TestTransactionModel::storedOrdersOfALongTape()
{
    // A tape of 5,000 transactions sorted through the orders ingest stored: ends, middle and
    // lookups, each against SQL.
    const std::string tape = dir_.file("long.zkdv");
    SyntheticDemoOptions options;
    options.steps = 5000;
    options.batchSize = 2;
    options.features = 2;
    options.classes = 2;
    options.overwrite = true;
    writeSyntheticDemoTape(tape, options);
    const std::string path = dir_.file("long.zkaudit");
    std::int64_t tapeId = 0;
    {
        CaseStore store(path, CaseStore::Access::ReadWrite);
        tapeId = store.ingestTape(tape).tapeId;
    }
    Database db(path, Database::Mode::ReadOnly);
    const auto query = [&](const std::string& text) {
        Statement rows = db.prepare(text);
        rows.bind(1, tapeId);
        IndexList result;
        while (rows.step())
            result.push_back(static_cast<quint64>(rows.int64(0)));
        return result;
    };
    for (const auto& [column, name] : {std::pair(int(Model::LossColumn), "loss"), std::pair(int(Model::UpdateNormColumn), "update_norm")}) {
        const IndexList ascending = query(std::string("SELECT idx FROM transactions WHERE tape_id = ?1 ORDER BY ") + name + ", idx");
        QCOMPARE(ascending.size(), std::size_t(5000));
        for (Qt::SortOrder order : {Qt::AscendingOrder, Qt::DescendingOrder}) {
            const IndexList expected = order == Qt::AscendingOrder ? ascending : IndexList(ascending.rbegin(), ascending.rend());
            Model model;
            QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
            model.setCase(QString::fromStdString(path), tapeId);
            model.sort(column, order);
            QCOMPARE(model.rowCount(), 5000);
            for (int row : {0, 1, 1023, 4999, 4976, 3976})
                QCOMPARE(model.data(model.index(row, 0), Model::TransactionIndexRole).toULongLong(), expected[std::size_t(row)]);
            QCOMPARE(model.transactionAt(2500), expected[2500]);
            QCOMPARE(model.rowOfTransaction(expected[1500]), 1500);
            QCOMPARE(shownThroughData(model), expected);
        }
    }
    // A lookup first (before any row in the middle was read).
    Model model;
    model.setCase(QString::fromStdString(path), tapeId);
    model.sort(Model::LossColumn, Qt::DescendingOrder);
    const IndexList byLoss = query("SELECT idx FROM transactions WHERE tape_id = ?1 ORDER BY loss DESC, idx DESC");
    QCOMPARE(model.rowOfTransaction(byLoss[2222]), 2222);
    QCOMPARE(model.rowOfTransaction(byLoss[7]), 7);
}

void TestTransactionModel::sqliteErrorsDoNotCrash()
{
    const std::string path = copyCase("broken.zkaudit");
    Model model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy problems(&model, &Model::problem);
    model.setCase(QString::fromStdString(path), tapeId_);
    QCOMPARE(model.rowCount(), int(kSteps));
    {
        Database writer(path, Database::Mode::ReadWrite);
        writer.exec("DROP TABLE verdicts");
    }
    // A window not read yet: data() fails, reports it, and the model empties itself.
    QVERIFY(!model.data(model.index(model.rowCount() - 1, Model::VerdictColumn)).isValid());
    QTRY_COMPARE(model.rowCount(), 0);
    QCOMPARE(problems.count(), 1);

    // Opened again, the damaged case is refused at once (CaseStore's schema check), naming
    // the missing table.
    model.setCase(QString::fromStdString(path), tapeId_);
    QCOMPARE(problems.count(), 2);
    QCOMPARE(model.rowCount(), 0);
    QVERIFY2(problems.last().first().toString().contains(QStringLiteral("verdicts")), qPrintable(problems.last().first().toString()));

    // A sort that needs a table dropped after the case was opened.
    const std::string second = copyCase("broken-sort.zkaudit");
    model.setCase(QString::fromStdString(second), tapeId_);
    QCOMPARE(problems.count(), 2);
    QCOMPARE(model.rowCount(), int(kSteps));
    {
        Database writer(second, Database::Mode::ReadWrite);
        writer.exec("DROP TABLE verdicts");
    }
    model.sort(Model::VerdictColumn, Qt::AscendingOrder);
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(problems.count(), 3);
    QVERIFY2(problems.last().first().toString().contains(QStringLiteral("verdicts")), qPrintable(problems.last().first().toString()));
}

QTEST_MAIN(TestTransactionModel)
#include "test_transaction_model.moc"
