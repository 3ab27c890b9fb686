// Envelope calibrations without torch: nearest-rank quantiles on pinned vectors, what a
// calibration counts of an outcome, the file's round trip and every refusal of a malformed
// one (naming the file and the member), and which envelope a run derives for which pair.

#include <QtTest>

#include <cmath>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "zkdv/audit/envelope_calibration.h"
#include "zkdv/util/error.h"

using namespace zkdv;

Q_DECLARE_METATYPE(std::vector<double>)

namespace {

NumericEnvironment environment(int threads)
{
    NumericEnvironment e;
    e.cpuVendor = "GenuineIntel";
    e.cpuModel = "Test CPU";
    e.cpuFlags = {"avx", "avx2", "fma"};
    e.torchCpuCapability = "AVX2";
    e.blas = "mkl";
    e.intraOpThreads = threads;
    e.settings = {{"OMP_NUM_THREADS", "1"}};
    return e;
}

EnvironmentPair pairOf(int recordedThreads, int replayThreads)
{
    EnvironmentPair pair;
    pair.recorded = environment(recordedThreads);
    pair.recordedTorch = "2.15.0";
    pair.replay = environment(replayThreads);
    pair.replayLibtorch = "2.15.0";
    pair.device = "cpu";
    return pair;
}

TensorComparison measured(const std::string& slot, double ratio, double ulp = 3, double rel = 1e-6)
{
    TensorComparison c;
    c.tensor = "fc.weight";
    c.slot = slot;
    c.metrics.bitwiseEqual = ratio == 0 && ulp == 0;
    c.metrics.maxUlp = ulp;
    c.metrics.relativeL2 = rel;
    c.envelopeRatio = ratio;
    return c;
}

// A calibration of `n` delta comparisons with ratios 1..n (so max n).
EnvelopeCalibration calibrationOf(std::uint64_t n, const EnvironmentPair& pair)
{
    CalibrationSampler sampler;
    TransactionOutcome outcome;
    for (std::uint64_t i = 1; i <= n; ++i)
        outcome.comparisons.push_back(measured("delta", static_cast<double>(i)));
    sampler.add(outcome);
    EnvelopeCalibration c;
    c.pair = pair;
    c.kinds = sampler.kinds();
    c.createdAt = "2026-12-07T04:00:00Z";
    c.zkdvVersion = "test";
    c.sources.push_back({std::string(64, 'a'), 2, n});
    return c;
}

}  // namespace

class TestEnvelopeCalibration : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void quantilesAreNearestRank_data();
    void quantilesAreNearestRank();
    void samplerCountsWhatAnEnvelopeJudges();
    void fileRoundTrips();
    void malformedFileIsRefused_data();
    void malformedFileIsRefused();
    void pairDifferencesNameTheSide();
    void envelopeFollowsThePair();
};

void TestEnvelopeCalibration::quantilesAreNearestRank_data()
{
    QTest::addColumn<std::vector<double>>("values");
    QTest::addColumn<double>("p50");
    QTest::addColumn<double>("p90");
    QTest::addColumn<double>("p99");
    QTest::addColumn<double>("max");
    QTest::newRow("empty") << std::vector<double>{} << 0.0 << 0.0 << 0.0 << 0.0;
    QTest::newRow("one") << std::vector<double>{7.5} << 7.5 << 7.5 << 7.5 << 7.5;
    // ⌈0.5·3⌉ = 2nd, ⌈0.9·3⌉ = 3rd: unsorted input is sorted first.
    QTest::newRow("three unsorted") << std::vector<double>{3, 1, 2} << 2.0 << 3.0 << 3.0 << 3.0;
    // ⌈0.5·10⌉ = 5th, ⌈0.9·10⌉ = 9th, ⌈0.99·10⌉ = 10th.
    QTest::newRow("ten") << std::vector<double>{10, 9, 8, 7, 6, 5, 4, 3, 2, 1} << 5.0 << 9.0 << 10.0 << 10.0;
    std::vector<double> hundred;
    for (int i = 1; i <= 100; ++i)
        hundred.push_back(i * 0.5);
    QTest::newRow("hundred") << hundred << 25.0 << 45.0 << 49.5 << 50.0;
    std::vector<double> withZeros(95, 0.0);
    for (double v : {1.0, 2.0, 3.0, 4.0, 1000.0})
        withZeros.push_back(v);
    // 95 bit-for-bit comparisons and 5 measured: p99 is the 99th, 4.
    QTest::newRow("mostly zero") << withZeros << 0.0 << 0.0 << 4.0 << 1000.0;
}

void TestEnvelopeCalibration::quantilesAreNearestRank()
{
    QFETCH(std::vector<double>, values);
    QFETCH(double, p50);
    QFETCH(double, p90);
    QFETCH(double, p99);
    QFETCH(double, max);
    const SampleQuantiles q = quantilesOf(values);
    QCOMPARE(q.count, std::uint64_t(values.size()));
    QCOMPARE(q.p50, p50);
    QCOMPARE(q.p90, p90);
    QCOMPARE(q.p99, p99);
    QCOMPARE(q.max, max);
}

void TestEnvelopeCalibration::samplerCountsWhatAnEnvelopeJudges()
{
    QCOMPARE(calibrationKind("total_norm/1"), std::string("total_norm"));
    QCOMPARE(calibrationKind("state/exp_avg"), std::string("state/exp_avg"));
    QCOMPARE(calibrationKind("state/"), std::string());
    QCOMPARE(calibrationKind("state-digest"), std::string());
    QCOMPARE(calibrationKind("samples"), std::string());

    TransactionOutcome outcome;
    outcome.comparisons.push_back(measured("delta", 12.5));
    outcome.comparisons.push_back(measured("delta", 0.0, 0, 0));  // bit for bit across environments: a sample of 0
    outcome.comparisons.push_back(measured("loss", 3.0, 64, 5e-6));
    TensorComparison noise = measured("delta", 4e5);
    noise.roundingNoise = true;
    outcome.comparisons.push_back(noise);
    TensorComparison unbounded = measured("snapshot/param", std::numeric_limits<double>::infinity());
    outcome.comparisons.push_back(unbounded);
    TensorComparison integer = measured("snapshot/buffer", std::numeric_limits<double>::quiet_NaN());
    integer.metrics.bitwiseEqual = false;
    outcome.comparisons.push_back(integer);
    TensorComparison counter = measured("state/step", std::numeric_limits<double>::quiet_NaN(), 0, 0);
    counter.metrics.bitwiseEqual = true;  // a counter bit for bit: no sample, nothing wrong
    outcome.comparisons.push_back(counter);
    TensorComparison signedZero = measured("update/l2", std::numeric_limits<double>::quiet_NaN(), 0, 0);
    signedZero.metrics.bitwiseEqual = false;  // -0 against +0: a difference of 0, a sample of 0
    outcome.comparisons.push_back(signedZero);
    TensorComparison digest = measured("state-digest", std::numeric_limits<double>::quiet_NaN());
    digest.metrics.bitwiseEqual = false;
    outcome.comparisons.push_back(digest);  // never judged by an envelope: not counted at all

    CalibrationSampler sampler;
    sampler.add(outcome);
    const std::vector<KindCalibration> kinds = sampler.kinds();
    QCOMPARE(kinds.size(), std::size_t(3));
    QCOMPARE(kinds[0].kind, std::string("delta"));
    QCOMPARE(kinds[0].ratio.count, std::uint64_t(2));
    QCOMPARE(kinds[0].ratio.max, 12.5);
    QCOMPARE(kinds[0].ratio.p50, 0.0);
    QCOMPARE(kinds[0].maxUlp.max, 3.0);
    QCOMPARE(kinds[1].kind, std::string("loss"));
    QCOMPARE(kinds[1].maxUlp.max, 64.0);
    QCOMPARE(kinds[1].relativeL2.max, 5e-6);
    QCOMPARE(kinds[2].kind, std::string("update/l2"));
    QCOMPARE(kinds[2].ratio.count, std::uint64_t(1));
    QCOMPARE(kinds[2].ratio.max, 0.0);
    QCOMPARE(sampler.noiseExcluded(), std::uint64_t(1));
    QCOMPARE(sampler.unbounded(), std::uint64_t(1));
    QCOMPARE(sampler.unjudged(), std::uint64_t(1));
}

void TestEnvelopeCalibration::fileRoundTrips()
{
    EnvelopeCalibration c = calibrationOf(150, pairOf(1, 2));
    c.noiseExcluded = 7;
    QCOMPARE(c.samples(), std::uint64_t(150));
    QCOMPARE(c.maxRatio(), 150.0);
    QCOMPARE(c.envelope(), 600.0);
    QCOMPARE(c.quantileLevel(), 1.0 - 1.0 / 151.0);
    QVERIFY(c.refusal().empty());
    const EnvelopeCalibration back = EnvelopeCalibration::parse(c.toJson(), "cal.json");
    QCOMPARE(back.toJson(), c.toJson());
    QVERIFY(back.pair.differences(c.pair).empty());
    QCOMPARE(back.noiseExcluded, std::uint64_t(7));
    QCOMPARE(back.kinds.size(), std::size_t(1));
    QCOMPARE(back.kinds[0].ratio.p90, 135.0);
    QCOMPARE(back.sources.size(), std::size_t(1));

    // Below the minimum the file is still valid, and refused for use saying why.
    const EnvelopeCalibration few = EnvelopeCalibration::parse(calibrationOf(99, pairOf(1, 2)).toJson(), "few.json");
    QVERIFY2(few.refusal().find("99 honest comparisons, fewer than the 100") != std::string::npos, few.refusal().c_str());
    // Tiny ratios still give an envelope of at least one rounding.
    EnvelopeCalibration tiny = calibrationOf(100, pairOf(1, 2));
    for (KindCalibration& k : tiny.kinds)
        k.ratio = {k.ratio.count, 0, 0, 0.01, 0.1};
    QCOMPARE(tiny.envelope(), kMinimumCalibratedEnvelope);
}

void TestEnvelopeCalibration::malformedFileIsRefused_data()
{
    const std::string good = calibrationOf(150, pairOf(1, 2)).toJson();
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("named");  // what the message must name besides the file
    auto edited = [&](const std::function<void(nlohmann::json&)>& edit) {
        nlohmann::json document = nlohmann::json::parse(good);
        edit(document);
        return QByteArray::fromStdString(document.dump());
    };
    QTest::newRow("truncated") << QByteArray::fromStdString(good.substr(0, good.size() / 2)) << "not valid JSON";
    QTest::newRow("not an object") << QByteArray("[1, 2]") << "must be an object";
    QTest::newRow("NaN literal") << QByteArray::fromStdString(nlohmann::json::parse(good).dump()).replace("\"p90\":135.0", "\"p90\":NaN")
                                 << "not valid JSON";
    QTest::newRow("number past a double") << QByteArray::fromStdString(nlohmann::json::parse(good).dump()).replace("\"p90\":135.0", "\"p90\":1e400")
                                          << "no double can hold";
    QTest::newRow("negative quantile") << edited([](nlohmann::json& d) { d["kinds"][0]["ratio"]["p50"] = -1.0; }) << "kinds[0].ratio.p50";
    QTest::newRow("NaN as text") << edited([](nlohmann::json& d) { d["kinds"][0]["ratio"]["p90"] = "NaN"; }) << "kinds[0].ratio.p90";
    QTest::newRow("huge ratio") << edited([](nlohmann::json& d) {
        d["kinds"][0]["ratio"]["max"] = 1e30;
        d["max_ratio"] = 1e30;
        d["envelope"] = 4e30;
    }) << "kinds[0].ratio.max";
    QTest::newRow("out of order") << edited([](nlohmann::json& d) { d["kinds"][0]["ratio"]["p99"] = 200.0; }) << "kinds[0].ratio";
    QTest::newRow("huge count") << edited([](nlohmann::json& d) { d["kinds"][0]["count"] = 18446744073709551615ull; }) << "kinds[0].count";
    QTest::newRow("fractional count") << edited([](nlohmann::json& d) { d["kinds"][0]["count"] = 150.5; }) << "kinds[0].count";
    QTest::newRow("samples disagree") << edited([](nlohmann::json& d) { d["samples"] = 1000; }) << "samples";
    QTest::newRow("max ratio disagrees") << edited([](nlohmann::json& d) { d["max_ratio"] = 1.0; }) << "max_ratio";
    QTest::newRow("envelope disagrees") << edited([](nlohmann::json& d) { d["envelope"] = 1e6; }) << "envelope";
    QTest::newRow("another factor") << edited([](nlohmann::json& d) { d["safety_factor"] = 100.0; }) << "safety_factor";
    QTest::newRow("unknown kind") << edited([](nlohmann::json& d) { d["kinds"][0]["kind"] = "state-digest"; }) << "kinds[0].kind";
    QTest::newRow("duplicate kind") << edited([](nlohmann::json& d) {
        d["kinds"].push_back(d["kinds"][0]);
        d["samples"] = 300;
    }) << "kinds[1].kind";
    QTest::newRow("missing pair") << edited([](nlohmann::json& d) { d.erase("replay"); }) << "replay is missing";
    QTest::newRow("bad environment") << edited([](nlohmann::json& d) { d["recorded"]["numerics"]["intra_op_threads"] = "two"; }) << "recorded.numerics";
    QTest::newRow("another version") << edited([](nlohmann::json& d) { d["zkdv_calibration"] = 2; }) << "zkdv_calibration";
    QTest::newRow("long text") << edited([](nlohmann::json& d) { d["replay"]["device"] = std::string(1000, 'x'); }) << "replay.device";
}

void TestEnvelopeCalibration::malformedFileIsRefused()
{
    QFETCH(QByteArray, text);
    QFETCH(QString, named);
    try {
        EnvelopeCalibration::parse(text.toStdString(), "hostile.json");
        QFAIL("a malformed calibration was accepted");
    } catch (const FormatError& error) {
        const std::string message = error.what();
        QVERIFY2(message.find("hostile.json") != std::string::npos, message.c_str());
        QVERIFY2(message.find(named.toStdString()) != std::string::npos, message.c_str());
    }
}

void TestEnvelopeCalibration::pairDifferencesNameTheSide()
{
    const EnvironmentPair a = pairOf(1, 2);
    QVERIFY(a.differences(pairOf(1, 2)).empty());
    QCOMPARE(a.differences(pairOf(1, 3)), std::vector<std::string>{"replay.intra_op_threads"});
    QCOMPARE(a.differences(pairOf(4, 2)), std::vector<std::string>{"recorded.intra_op_threads"});
    EnvironmentPair other = a;
    other.replayLibtorch = "1.13.0";
    other.device = "cuda:0";
    other.replay.settings["MKL_CBWR"] = "AVX2";
    QCOMPARE(a.differences(other), (std::vector<std::string>{"replay.settings.MKL_CBWR", "replay.libtorch", "device"}));
    const std::string described = a.describeDifferences(other);
    QVERIFY2(described.find("replay.libtorch \"2.15.0\" -> \"1.13.0\"") != std::string::npos, described.c_str());
    QVERIFY2(described.find("device \"cpu\" -> \"cuda:0\"") != std::string::npos, described.c_str());
    // The devices and determinism profiles belong to the pair: a calibration of CPU tapes is
    // not one of GPU tapes recorded on the same host, nor of another profile.
    EnvironmentPair gpu = a;
    gpu.recordedDevice = "cuda:0";
    gpu.recordedDeterminism = DeterminismProfile{};
    gpu.replayDeterminism.float32MatmulPrecision = "medium";
    QCOMPARE(a.differences(gpu),
             (std::vector<std::string>{"recorded.device", "recorded.determinism", "replay.determinism.matmul.float32_precision"}));
    const std::string gpuDescribed = a.describeDifferences(gpu);
    QVERIFY2(gpuDescribed.find("recorded.device \"cpu\" -> \"cuda:0\"") != std::string::npos, gpuDescribed.c_str());
}

void TestEnvelopeCalibration::envelopeFollowsThePair()
{
    LoadedCalibration loaded{"cal.json", std::string(64, 'b'), calibrationOf(150, pairOf(1, 2))};
    // The pair matches: max ratio 150 x 4.
    EnvelopeChoice choice = chooseEnvelope(loaded, pairOf(1, 2), true, 1024, false);
    QVERIFY(choice.calibrationUsed);
    QCOMPARE(choice.source, std::string("calibrated"));
    QCOMPARE(choice.envelope, 600.0);
    QVERIFY2(choice.note.find("150 honest comparisons") != std::string::npos, choice.note.c_str());
    // Another replay side: the default applies, naming what differs.
    choice = chooseEnvelope(loaded, pairOf(1, 3), true, 1024, false);
    QVERIFY(!choice.calibrationUsed);
    QCOMPARE(choice.source, std::string("default"));
    QCOMPARE(choice.envelope, 1024.0);
    QVERIFY2(choice.note.find("replay.intra_op_threads \"2\" -> \"3\"") != std::string::npos, choice.note.c_str());
    // Too few samples.
    LoadedCalibration few{"few.json", std::string(64, 'c'), calibrationOf(20, pairOf(1, 2))};
    choice = chooseEnvelope(few, pairOf(1, 2), true, 1024, false);
    QCOMPARE(choice.source, std::string("default"));
    QVERIFY2(choice.note.find("fewer than the 100") != std::string::npos, choice.note.c_str());
    // The same environment: no envelope applies; a tape without numerics: no pair.
    choice = chooseEnvelope(loaded, pairOf(2, 2), false, 1024, false);
    QVERIFY(!choice.calibrationUsed);
    QVERIFY2(choice.note.find("recording's numerical environment") != std::string::npos, choice.note.c_str());
    choice = chooseEnvelope(loaded, std::nullopt, true, 1024, false);
    QVERIFY(!choice.calibrationUsed);
    QVERIFY2(choice.note.find("records no numerical environment") != std::string::npos, choice.note.c_str());
    // No calibration: the tolerance's envelope, given or default.
    choice = chooseEnvelope(std::nullopt, pairOf(1, 2), true, 50, true);
    QCOMPARE(choice.source, std::string("tolerance"));
    QCOMPARE(choice.envelope, 50.0);
}

QTEST_GUILESS_MAIN(TestEnvelopeCalibration)
#include "test_envelope_calibration.moc"
