// The sampling plausibility check (zkdv/tape/sampling_plausibility.h; issue 26, item 10): a
// forger who grinds chain-bound draws until no transaction is checked keeps the draws
// consistent, so the reader accepts them; the binomial tail of the number of checks drawn
// flags such a tape in verify, info and the report, while honest tapes stay unflagged.

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <chrono>
#include <cmath>
#include <cstdlib>

#include "audit_process.h"
#include "dishonest_trainer.h"
#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/report/audit_report.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/tape/sampling_plausibility.h"
#include "zkdv/tape/tape_scanner.h"

using namespace zkdv;

namespace {

// P[X <= k] by the textbook sum with plain doubles: an independent check for small n.
double directLowerTail(int n, int k, double p)
{
    double sum = 0.0;
    for (int i = 0; i <= k; ++i) {
        double coefficient = 1.0;
        for (int j = 0; j < i; ++j)
            coefficient = coefficient * (n - j) / (j + 1);
        sum += coefficient * std::pow(p, i) * std::pow(1.0 - p, n - i);
    }
    return sum;
}

struct Run {
    int exitCode = -1;
    std::string out;
    std::string err;
};

Run audit(const std::vector<std::string>& arguments)
{
    test::AuditProcess process(test::auditExecutable(), arguments);
    Run run;
    run.exitCode = process.wait(std::chrono::minutes(5));
    run.out = process.out();
    run.err = process.err();
    return run;
}

QJsonObject jsonOf(const std::string& text) { return QJsonDocument::fromJson(QByteArray::fromStdString(text)).object(); }

// Removes every sampled check of every transaction: the deltas and the state digest.
void dropChecks(test::RawRecord& record)
{
    if (record.type != tape::RecordType::Transaction)
        return;
    test::Payload payload = test::readPayload(record);
    std::vector<test::PayloadTensor> kept;
    for (test::PayloadTensor& tensor : payload.tensors)
        if (tensor.name.rfind("delta/", 0) != 0)
            kept.push_back(std::move(tensor));
    payload.tensors = std::move(kept);
    payload.metadata.erase("state_digest");
    test::writePayload(record, payload);
}

TransactionOutcome exactOutcome(std::uint64_t index)
{
    TransactionOutcome o;
    o.index = index;
    o.segment = index / 12;
    o.verdict = Verdict::Exact;
    o.detail = "replayed bit for bit";
    TensorComparison comparison;
    comparison.tensor = "w";
    comparison.slot = "param";
    comparison.verdict = Verdict::Exact;
    comparison.metrics.elements = 12;
    comparison.metrics.bitwiseEqual = true;
    o.comparisons.push_back(comparison);
    return o;
}

// The report of a case holding `tape` and one sealed run whose ten transactions all replayed
// exactly, stored the way a replay stores them: only the tape can make it fail.
ReportData reportOfExactRun(const std::string& tape, const std::string& casePath)
{
    CaseStore store(casePath, CaseStore::Access::ReadWrite);
    const std::int64_t tapeId = store.ingestTape(tape).tapeId;
    ReplayStore replay(store.database());
    ReplayRunInfo info;
    info.tapeId = tapeId;
    info.device = "cpu";
    info.selection = "random:10";
    info.seed = 3;
    info.tolerance = "exact";
    info.selectedCount = 10;
    const std::int64_t runId = replay.beginRun(info);
    std::vector<TransactionOutcome> outcomes;
    for (std::uint64_t i = 0; i < 10; ++i)
        outcomes.push_back(exactOutcome(i));
    replay.storeOutcomes(runId, outcomes);
    replay.finishRun(runId, RunStatus::Finished, "");
    return buildAuditReport(store);
}

}  // namespace

class TestSamplingPlausibility : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void binomialTailKnownValues();
    void binomialTailOfAMillionTransactions();
    void plausibilityOfCounts();
    void goldenTapesArePlausible();
    void groundTapeIsFlagged();

private:
    test::TempDir dir_;
};

void TestSamplingPlausibility::initTestCase()
{
    // The runs below are sealed with a key of this test's own.
    ::setenv("ZKDV_CONFIG_HOME", dir_.file("auditor").c_str(), 1);
}

void TestSamplingPlausibility::binomialTailKnownValues()
{
    // Zero update checks in 96 draws at p = 0.25: 0.75^96 = 1.0e-12.
    const double zeroIn96 = binomialLowerTail(96, 0, 0.25);
    QVERIFY2(std::abs(zeroIn96 / std::pow(0.75, 96) - 1.0) < 1e-12, qPrintable(QString::number(zeroIn96, 'g', 17)));
    QVERIFY(zeroIn96 > 1.01e-12 && zeroIn96 < 1.02e-12);  // 1.0136e-12
    QVERIFY(std::abs(binomialLogLowerTail(96, 0, 0.25) - 96 * std::log(0.75)) < 1e-9);
    // Ten fair coins, at most three heads: (1 + 10 + 45 + 120) / 1024.
    QVERIFY(std::abs(binomialLowerTail(10, 3, 0.5) - 176.0 / 1024.0) < 1e-15);
    // Against the textbook sum, over the left tail, the mode and the right tail.
    for (int n : {1, 7, 40, 96, 150})
        for (double p : {0.01, 0.25, 0.4, 0.9})
            for (int k = 0; k < n; k += std::max(1, n / 9)) {
                const double expected = directLowerTail(n, k, p), found = binomialLowerTail(n, static_cast<std::uint64_t>(k), p);
                QVERIFY2(std::abs(found - expected) <= 1e-10 * expected + 1e-300,
                         qPrintable(QStringLiteral("n %1 k %2 p %3: %4, expected %5").arg(n).arg(k).arg(p).arg(found, 0, 'g', 17).arg(expected, 0, 'g', 17)));
            }
    // Certain and impossible counts.
    QCOMPARE(binomialLowerTail(96, 96, 0.25), 1.0);
    QCOMPARE(binomialLowerTail(96, 200, 0.25), 1.0);
    QCOMPARE(binomialLowerTail(96, 0, 0.0), 1.0);
    QCOMPARE(binomialLowerTail(0, 0, 0.5), 1.0);
    QCOMPARE(binomialLowerTail(96, 95, 1.0), 0.0);
    QVERIFY(std::isinf(binomialLogLowerTail(96, 95, 1.0)));
}

void TestSamplingPlausibility::binomialTailOfAMillionTransactions()
{
    constexpr std::uint64_t n = 1000000;
    // Far below a double's range: the log still says how far.
    const double logZero = binomialLogLowerTail(n, 0, 0.25);
    QVERIFY2(std::abs(logZero / (1e6 * std::log(0.75)) - 1.0) < 1e-9, qPrintable(QString::number(logZero, 'g', 17)));
    QCOMPARE(binomialLowerTail(n, 0, 0.25), 0.0);
    QCOMPARE(probabilityText(logZero / std::log(10.0)), std::string("1.8e-124939"));
    // Near the mean, the normal approximation: P[X <= np] = 0.5 + a continuity term, and 2.31
    // standard deviations below it about 0.0105.
    const double atMean = binomialLowerTail(n, 250000, 0.25);
    QVERIFY2(atMean > 0.499 && atMean < 0.502, qPrintable(QString::number(atMean, 'g', 17)));
    const double below = binomialLowerTail(n, 249000, 0.25);
    QVERIFY2(below > 0.0095 && below < 0.0115, qPrintable(QString::number(below, 'g', 17)));
    QVERIFY(binomialLowerTail(n, 240000, 0.25) < 1e-6);
    QVERIFY(binomialLowerTail(n, 999999, 0.25) == 1.0);
}

void TestSamplingPlausibility::plausibilityOfCounts()
{
    const SamplingPlausibility none = samplingPlausibility(0.25, 0.25, {96, 0, 0});
    QVERIFY(none.implausible());
    QCOMPARE(none.update.text(96), std::string("0 of 96 (expected 24, P[X <= 0] = 1.0e-12)"));
    QVERIFY2(none.finding().find("implausibly few sampled checks") != std::string::npos, none.finding().c_str());
    // Typical counts, and counts low but not beyond chance (10 of 96: about 5e-4).
    QVERIFY(!samplingPlausibility(0.25, 0.25, {96, 24, 20}).implausible());
    QVERIFY(!samplingPlausibility(0.25, 0.25, {96, 10, 24}).implausible());
    QVERIFY(samplingPlausibility(0.25, 0.25, {96, 24, 2}).implausible());  // state checks alone
    QVERIFY(samplingPlausibility(0.25, 0.25, {96, 24, 2}).finding().find("state checks 2 of 96") != std::string::npos);
    // No check drawn at probability 0 is what an honest tape shows; every check at 1 too.
    QVERIFY(!samplingPlausibility(0.0, 0.0, {1000000, 0, 0}).implausible());
    QVERIFY(!samplingPlausibility(1.0, 1.0, {96, 96, 96}).implausible());
    QVERIFY(samplingPlausibility(1.0, 0.0, {96, 95, 0}).implausible());
    QVERIFY(!samplingPlausibility(0.25, 0.25, {0, 0, 0}).implausible());
}

void TestSamplingPlausibility::goldenTapesArePlausible()
{
    const QDir golden(QStringLiteral(ZKDV_TEST_DATA_DIR "/golden"));
    const QStringList tapes = golden.entryList({QStringLiteral("*.zkdv")}, QDir::Files);
    QVERIFY(tapes.size() >= 9);
    for (const QString& name : tapes) {
        const TapeSummary summary = scanTape(golden.filePath(name).toStdString());
        const std::optional<SamplingPlausibility> plausibility = summary.samplingPlausibility();
        QVERIFY2(plausibility, qPrintable(name));
        QVERIFY2(!plausibility->implausible(), qPrintable(name + QStringLiteral(": ") + QString::fromStdString(plausibility->text())));
        QCOMPARE(plausibility->transactions, summary.transactionCount);
    }
}

void TestSamplingPlausibility::groundTapeIsFlagged()
{
    // An honest 96-step tape at p = 0.25 for both checks, and the same tape with every check
    // removed and each record's free bytes ground until the next transaction draws none, as a
    // forger would do it (tests/support/dishonest_trainer.h): the draws hold, the tape
    // verifies as intact, and only the count gives it away.
    SyntheticDemoOptions options;
    options.steps = 96;
    options.batchSize = 4;
    options.features = 4;
    options.classes = 3;
    options.updateCheckProbability = 0.25;
    options.stateCheckProbability = 0.25;
    options.seed = 26;
    const std::string honest = dir_.file("honest.zkdv"), ground = dir_.file("ground.zkdv");
    writeSyntheticDemoTape(honest, options);
    const test::RewriteStatistics statistics = test::rewriteTape(honest, ground, dropChecks);
    qInfo("removing every sampled check of 96 transactions (p_u = p_s = 0.25) took %llu digests beyond one per record: "
          "%.2f digests per transaction in all",
          static_cast<unsigned long long>(statistics.digestsTried), 1.0 + static_cast<double>(statistics.digestsTried) / 96.0);

    const TapeSummary honestScan = scanTape(honest), groundScan = scanTape(ground);
    QVERIFY(honestScan.complete());
    QVERIFY2(groundScan.complete(), groundScan.problem ? groundScan.problem->describe().c_str() : "not sealed");
    QCOMPARE(groundScan.drawnChecks.updateChecks, std::uint64_t(0));
    QCOMPARE(groundScan.drawnChecks.stateChecks, std::uint64_t(0));
    QVERIFY(honestScan.drawnChecks.updateChecks > 0);
    QVERIFY(!honestScan.samplingPlausibility()->implausible());
    QVERIFY(groundScan.samplingPlausibility()->implausible());

    // verify: exit 1, the finding in text and JSON; the honest tape passes.
    Run run = audit({"verify", ground, "--quiet"});
    QVERIFY2(run.exitCode == 1, (run.out + run.err).c_str());
    QVERIFY2(run.out.find("FINDING: the tape carries implausibly few sampled checks") != std::string::npos, run.out.c_str());
    QVERIFY2(run.out.find("update checks 0 of 96 (expected 24, P[X <= 0] = 1.0e-12)") != std::string::npos, run.out.c_str());
    run = audit({"verify", ground, "--json", "--quiet"});
    QCOMPARE(run.exitCode, 1);
    QJsonObject plausibility = jsonOf(run.out).value(QStringLiteral("sampling_plausibility")).toObject();
    QCOMPARE(plausibility.value(QStringLiteral("implausible")).toBool(), true);
    QCOMPARE(plausibility.value(QStringLiteral("update_checks")).toObject().value(QStringLiteral("observed")).toInt(-1), 0);
    QVERIFY(plausibility.value(QStringLiteral("update_checks")).toObject().value(QStringLiteral("lower_tail")).toDouble() < 1e-11);
    QCOMPARE(jsonOf(run.out).value(QStringLiteral("status")).toString(), QStringLiteral("sealed"));
    run = audit({"verify", honest, "--json", "--quiet"});
    QCOMPARE(run.exitCode, 0);
    QCOMPARE(jsonOf(run.out).value(QStringLiteral("sampling_plausibility")).toObject().value(QStringLiteral("implausible")).toBool(true), false);

    // info of the tape, and of a case holding it.
    run = audit({"info", ground, "--quiet"});
    QVERIFY2(run.out.find("FINDING: the tape carries implausibly few sampled checks") != std::string::npos, run.out.c_str());
    run = audit({"info", ground, "--json", "--quiet"});
    QCOMPARE(jsonOf(run.out).value(QStringLiteral("tape")).toObject().value(QStringLiteral("sampling_plausibility")).toObject().value(QStringLiteral("implausible")).toBool(),
             true);

    // The report of a run that replayed exactly still fails, and says why; the honest tape's passes.
    const ReportData groundReport = reportOfExactRun(ground, dir_.file("ground.zkaudit"));
    QVERIFY(!groundReport.passed());
    QCOMPARE(groundReport.outcome, AuditOutcome::Failed);
    QVERIFY2(groundReport.headline.find("implausibly few sampled checks") != std::string::npos, groundReport.headline.c_str());
    bool warned = false;
    for (const std::string& warning : groundReport.warnings)
        warned = warned || warning.find("a sign that the draws were ground") != std::string::npos;
    QVERIFY(warned);
    QVERIFY(renderReportJson(groundReport).find("\"implausible\": true") != std::string::npos);
    const ReportData honestReport = reportOfExactRun(honest, dir_.file("honest.zkaudit"));
    QVERIFY2(honestReport.passed(), honestReport.headline.c_str());
    QVERIFY(renderReportJson(honestReport).find("\"implausible\": false") != std::string::npos);

    run = audit({"info", dir_.file("ground.zkaudit"), "--json"});
    const QJsonArray tapes = jsonOf(run.out).value(QStringLiteral("tapes")).toArray();
    QCOMPARE(tapes.size(), qsizetype(1));
    QCOMPARE(tapes[0].toObject().value(QStringLiteral("sampling_plausibility")).toObject().value(QStringLiteral("implausible")).toBool(), true);
    run = audit({"info", dir_.file("ground.zkaudit")});
    QVERIFY2(run.out.find("FINDING:") != std::string::npos && run.out.find("PASSED") == std::string::npos, run.out.c_str());
}

QTEST_GUILESS_MAIN(TestSamplingPlausibility)
#include "test_sampling_plausibility.moc"
