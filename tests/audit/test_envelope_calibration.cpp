// Envelope calibrations without torch: nearest-rank quantiles and the robust ratio on pinned
// vectors, what a calibration counts of an outcome, the file's round trip (version 2, and
// version 1 still read) and every refusal of a malformed one (naming the file and the member),
// which envelope a run derives for which pair, and the attacks of a trainer who records the
// calibration tapes (issue 48, item 3): poisoned comparisons are named and refused, one below
// the fence widens the envelope no further than the robust ratio allows, a poison spread
// under the fence no further than the ceiling, and whatever calibrate would write a run uses.

#include <QtTest>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <tuple>

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
    c.robust = sampler.robustRatio();
    c.createdAt = "2026-12-07T04:00:00Z";
    c.zkdvVersion = "test";
    c.sources.push_back({std::string(64, 'a'), 2, n});
    return c;
}

// What `zkdv-audit calibrate` makes of a sampler (app/audit/calibrate_command.cpp): the
// calibration, and the comparisons beyond its fence (it writes the calibration only when
// there are none).
EnvelopeCalibration calibrationFrom(const CalibrationSampler& sampler, std::size_t sources = 1)
{
    EnvelopeCalibration c;
    c.pair = pairOf(1, 2);
    c.kinds = sampler.kinds();
    c.robust = sampler.robustRatio();
    c.ceiling = Tolerance::defaults().envelope;
    c.createdAt = "2026-12-07T04:00:00Z";
    c.zkdvVersion = "test";
    for (std::size_t i = 0; i < sources; ++i)
        c.sources.push_back({std::string(64, static_cast<char>('a' + i)), static_cast<std::int64_t>(i + 1), 24});
    return c;
}

// A ratio in [0, 1) that depends on nothing but its arguments.
double spread(std::size_t source, std::uint64_t transaction, std::size_t tensor, std::size_t slot)
{
    return static_cast<double>((source * 31 + transaction * 7919 + tensor * 104729 + slot * 1299709) % 1000) / 1000.0;
}

// A poison: what a comparison's ratio becomes (source, transaction, tensor, slot, honest ratio).
using Poison = std::function<double(std::size_t, std::uint64_t, const std::string&, const std::string&, double)>;

// Two honest calibration tapes (sources 0 and 1) of 24 transactions with snapshots every 12,
// as the 1 -> 2 threads pair measures the CNN demo (tests/cli: ratios up to about 3, half the
// deltas and every fingerprint bit for bit): per transaction a loss, five deltas and five
// update fingerprints; at the end of each segment each parameter and its Adam slot. 568
// comparisons, 208 nonzero, the largest 3.0. `poison` may change any of them.
CalibrationSampler honestTapes(const Poison& poison = {})
{
    static const std::vector<std::string> tensors = {"conv1.weight", "conv2.weight", "bn1.weight", "fc.weight", "fc.bias"};
    CalibrationSampler sampler;
    for (std::size_t source = 0; source < 2; ++source) {
        sampler.setSource(source);
        for (std::uint64_t t = 0; t < 24; ++t) {
            TransactionOutcome outcome;
            outcome.index = t;
            auto add = [&](const std::string& tensor, const std::string& slot, double ratio) {
                if (poison)
                    ratio = poison(source, t, tensor, slot, ratio);
                TensorComparison c = measured(slot, ratio, ratio == 0 ? 0 : 3, ratio == 0 ? 0 : 1e-6);
                c.tensor = tensor;
                outcome.comparisons.push_back(c);
            };
            add("loss", "loss", 0.5 + 1.1 * spread(source, t, 0, 0));
            for (std::size_t i = 0; i < tensors.size(); ++i) {
                add(tensors[i], "delta", (t + i) % 2 == 0 ? 0.0 : 0.01 + 0.45 * spread(source, t, i, 1));
                add(tensors[i], "update/l2", 0.0);
            }
            if (t % 12 == 11)
                for (std::size_t i = 0; i < tensors.size(); ++i) {
                    add(tensors[i], "snapshot/param", i == 2 && t == 11 && source == 0 ? 3.0 : 1.0 + 1.9 * spread(source, t, i, 2));
                    add(tensors[i], "state/exp_avg", 0.2 + 2.3 * spread(source, t, i, 3));
                }
            sampler.add(outcome);
        }
    }
    return sampler;
}

// What a run does with a calibration calibrate wrote: reads the file back and derives its
// envelope (the default tolerance's, since --calibration excludes --tolerance envelope).
EnvelopeChoice replayWith(const EnvelopeCalibration& c)
{
    const LoadedCalibration loaded{"cal.json", std::string(64, 'd'), EnvelopeCalibration::parse(c.toJson(), "cal.json")};
    return chooseEnvelope(loaded, pairOf(1, 2), true, Tolerance::defaults().envelope, false);
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
    void robustRatioIsNearestRankNeverTheLargest_data();
    void robustRatioIsNearestRankNeverTheLargest();
    void onePoisonedComparisonCannotMoveTheRobustRatio();
    void poisonedCalibrationIsRefused_data();
    void poisonedCalibrationIsRefused();
    void whateverCalibrateWritesReplayAccepts();
    void versionOneFileStillLoads();
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
    QCOMPARE(c.version, 2);
    QCOMPARE(c.robust.nonzero, std::uint64_t(150));
    QCOMPARE(c.robust.rank, std::uint64_t(2));
    QCOMPARE(c.robust.value, 149.0);
    QCOMPARE(c.ceiling, 1024.0);
    QCOMPARE(c.fence(), 1024.0);  // min(1024, 16 x 149)
    QCOMPARE(c.quantileLevel(), 1.0 - 1.0 / 151.0);
    QVERIFY(c.refusal().empty());
    const EnvelopeCalibration back = EnvelopeCalibration::parse(c.toJson(), "cal.json");
    QCOMPARE(back.toJson(), c.toJson());
    QVERIFY(back.pair.differences(c.pair).empty());
    QCOMPARE(back.noiseExcluded, std::uint64_t(7));
    QCOMPARE(back.kinds.size(), std::size_t(1));
    QCOMPARE(back.kinds[0].ratio.p90, 135.0);
    QCOMPARE(back.sources.size(), std::size_t(1));
    QCOMPARE(back.robust.value, 149.0);
    QCOMPARE(back.ceiling, 1024.0);

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
    QTest::newRow("another version") << edited([](nlohmann::json& d) { d["zkdv_calibration"] = 3; }) << "zkdv_calibration";
    QTest::newRow("version 0") << edited([](nlohmann::json& d) { d["zkdv_calibration"] = 0; }) << "zkdv_calibration";
    // Version 2: the robust ratio, the outlier factor and the ceiling the envelope derives from.
    QTest::newRow("robust ratio missing") << edited([](nlohmann::json& d) { d.erase("robust_ratio"); }) << "robust_ratio is missing";
    QTest::newRow("robust rank") << edited([](nlohmann::json& d) { d["robust_ratio"]["rank"] = 1; }) << "robust_ratio.rank";
    QTest::newRow("robust nonzero past samples") << edited([](nlohmann::json& d) { d["robust_ratio"]["nonzero"] = 151; }) << "robust_ratio.nonzero";
    QTest::newRow("robust value past max") << edited([](nlohmann::json& d) { d["robust_ratio"]["value"] = 151.0; }) << "robust_ratio.value";
    QTest::newRow("robust value zero") << edited([](nlohmann::json& d) { d["robust_ratio"]["value"] = 0.0; }) << "robust_ratio.value";
    QTest::newRow("another outlier factor") << edited([](nlohmann::json& d) { d["outlier_factor"] = 1e6; }) << "outlier_factor";
    QTest::newRow("ceiling below 1") << edited([](nlohmann::json& d) { d["ceiling"] = 0.5; }) << "ceiling";
    QTest::newRow("ceiling missing") << edited([](nlohmann::json& d) { d.erase("ceiling"); }) << "ceiling is missing";
    // An outlier calibrate would have refused to write: the largest ratio beyond the fence.
    QTest::newRow("beyond its fence") << edited([](nlohmann::json& d) { d["robust_ratio"]["value"] = 1.0; }) << "max_ratio is 150, beyond the fence 16";
    QTest::newRow("beyond its ceiling") << edited([](nlohmann::json& d) { d["ceiling"] = 100.0; }) << "beyond the fence 100";
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

void TestEnvelopeCalibration::robustRatioIsNearestRankNeverTheLargest_data()
{
    QTest::addColumn<std::vector<double>>("values");
    QTest::addColumn<quint64>("nonzero");
    QTest::addColumn<quint64>("rank");
    QTest::addColumn<double>("value");
    auto upTo = [](int n) {
        std::vector<double> v;
        for (int i = n; i >= 1; --i)
            v.push_back(i);
        return v;
    };
    QTest::newRow("empty") << std::vector<double>{} << quint64(0) << quint64(0) << 0.0;
    QTest::newRow("zeros") << std::vector<double>{0, 0, 0} << quint64(0) << quint64(0) << 0.0;
    // One nonzero ratio: it would be the largest, so there is none.
    QTest::newRow("one nonzero") << std::vector<double>{0, 5, 0} << quint64(1) << quint64(0) << 0.0;
    QTest::newRow("two") << std::vector<double>{0, 5, 3} << quint64(2) << quint64(2) << 3.0;
    // ⌈0.99·100⌉ = 99th smallest = 2nd largest; below 100 the p99 would be the largest.
    QTest::newRow("hundred") << upTo(100) << quint64(100) << quint64(2) << 99.0;
    QTest::newRow("fifty") << upTo(50) << quint64(50) << quint64(2) << 49.0;
    QTest::newRow("199") << upTo(199) << quint64(199) << quint64(2) << 198.0;
    // ⌈0.99·200⌉ = 198th smallest = 3rd largest.
    QTest::newRow("200") << upTo(200) << quint64(200) << quint64(3) << 198.0;
    std::vector<double> withZeros = upTo(1000);
    withZeros.insert(withZeros.begin() + 300, 500, 0.0);
    // ⌈0.99·1000⌉ = 990th smallest = 11th largest; the zeros are left out.
    QTest::newRow("thousand and zeros") << withZeros << quint64(1000) << quint64(11) << 990.0;
}

void TestEnvelopeCalibration::robustRatioIsNearestRankNeverTheLargest()
{
    QFETCH(std::vector<double>, values);
    QFETCH(quint64, nonzero);
    QFETCH(quint64, rank);
    QFETCH(double, value);
    const RobustRatio r = robustRatioOf(values);
    QCOMPARE(r.nonzero, std::uint64_t(nonzero));
    QCOMPARE(r.rank, std::uint64_t(rank));
    QCOMPARE(r.value, value);
    QCOMPARE(robustRank(nonzero), std::uint64_t(rank));
    // Where it is the nearest-rank p99 of the nonzero ratios, it is quantilesOf's.
    std::vector<double> positive;
    for (double v : values)
        if (v > 0)
            positive.push_back(v);
    if (positive.size() >= 200)
        QCOMPARE(r.value, quantilesOf(positive).p99);
}

// One comparison, whatever its ratio, moves the robust ratio by at most one rank: below the
// fence it widens the envelope to at most 16 x the honest largest ratio; above, it is named.
void TestEnvelopeCalibration::onePoisonedComparisonCannotMoveTheRobustRatio()
{
    const EnvelopeCalibration honest = calibrationFrom(honestTapes(), 2);
    QCOMPARE(honest.robust.nonzero, std::uint64_t(208));
    QCOMPARE(honest.robust.rank, std::uint64_t(3));
    QCOMPARE(honest.maxRatio(), 3.0);
    QVERIFY2(honest.robust.value > 2.0 && honest.robust.value < 3.0, std::to_string(honest.robust.value).c_str());
    QCOMPARE(honest.envelope(), 12.0);  // 4 x 3.0: the largest narrows what 16 x the robust ratio allows
    QVERIFY(honestTapes().beyond(honest.fence()).empty());
    for (double poison : {0.001, 1.0, 2.9, 3.0, 10.0, 45.0, 50.0, 1e3, 1e5, 2.1e7, 1e30}) {
        // The poisoned tape's transaction 5 has one fc.weight delta element scaled: one comparison.
        const CalibrationSampler sampler = honestTapes([poison](std::size_t source, std::uint64_t t, const std::string& tensor, const std::string& slot,
                                                                double ratio) {
            return source == 1 && t == 5 && tensor == "fc.weight" && slot == "delta" ? poison : ratio;
        });
        const EnvelopeCalibration c = calibrationFrom(sampler, 2);
        const std::string context = "poison " + std::to_string(poison) + ": robust " + std::to_string(c.robust.value) + ", envelope " +
                                    std::to_string(c.envelope()) + ", fence " + std::to_string(c.fence());
        QVERIFY2(c.robust.value <= honest.maxRatio(), context.c_str());
        QVERIFY2(c.fence() <= kCalibrationOutlierFactor * honest.maxRatio(), context.c_str());
        const std::vector<CalibrationComparison> outliers = sampler.beyond(c.fence());
        if (poison > c.fence()) {
            QVERIFY2(outliers.size() == 1, context.c_str());
            QCOMPARE(outliers[0].source, std::size_t(1));
            QCOMPARE(outliers[0].transaction, std::uint64_t(5));
            QCOMPARE(outliers[0].tensor, std::string("fc.weight"));
            QCOMPARE(outliers[0].slot, std::string("delta"));
            QCOMPARE(outliers[0].ratio, poison);
        } else {
            QVERIFY2(outliers.empty(), context.c_str());
            QVERIFY2(c.envelope() <= kCalibrationOutlierFactor * honest.maxRatio() && c.envelope() >= c.maxRatio(), context.c_str());
        }
    }
}

void TestEnvelopeCalibration::poisonedCalibrationIsRefused_data()
{
    QTest::addColumn<QString>("attack");
    QTest::newRow("one row x1.8") << "row";
    QTest::newRow("several poisoned rows") << "rows";
    QTest::newRow("just above the fence") << "above";
    QTest::newRow("just below the fence") << "below";
    QTest::newRow("just above the ceiling") << "ceiling";
    QTest::newRow("spread under the fence") << "spread";
}

// The attacks of a trainer who records the calibration tapes, as the ratios they make (the
// CLI test, tests/cli/test_calibrate_cli.cpp, makes them with real tapes): refused, naming
// each poisoned comparison, or used with an envelope no wider than the fence allows, which
// the run then uses as written.
void TestEnvelopeCalibration::poisonedCalibrationIsRefused()
{
    QFETCH(QString, attack);
    const double ceiling = Tolerance::defaults().envelope;
    const EnvelopeCalibration honest = calibrationFrom(honestTapes(), 2);
    // The fence with one more comparison above the robust ratio: the next rank (208 -> 209
    // nonzero keeps rank 3; a delta bit for bit made nonzero adds one).
    std::vector<double> ratios;
    {
        const CalibrationSampler sampler = honestTapes();
        for (const CalibrationComparison& c : sampler.beyond(0))
            ratios.push_back(c.ratio);
    }
    ratios.push_back(1e9);
    const double fenceWithOne = std::min(ceiling, kCalibrationOutlierFactor * robustRatioOf(ratios).value);

    Poison poison;
    std::set<std::tuple<std::size_t, std::uint64_t, std::string, std::string>> expected;  // the outliers, all of them
    bool refused = true;
    if (attack == "row") {
        // One row of fc.weight scaled by 1.8 in snapshot 12 of tape 1: the snapshot compared at
        // transaction 11 is 2.1e7 u x S apart, and every comparison of the segment it starts
        // (transactions 12 to 23) far beyond the ceiling (tests/cli measured 7.3e2 to 3.0e7).
        poison = [](std::size_t source, std::uint64_t t, const std::string& tensor, const std::string& slot, double ratio) {
            if (source != 1)
                return ratio;
            if (t == 11 && tensor == "fc.weight" && slot == "snapshot/param")
                return 2.1e7;
            return t >= 12 && slot != "update/l2" ? 1.2e5 + 1e6 * ratio : ratio;
        };
    } else if (attack == "rows") {
        // Rows of fc.weight's delta scaled by 1.8 in transactions 3, 9 and 17: three comparisons.
        poison = [](std::size_t source, std::uint64_t t, const std::string& tensor, const std::string& slot, double ratio) {
            return source == 1 && (t == 3 || t == 9 || t == 17) && tensor == "fc.weight" && slot == "delta" ? 4e5 + t : ratio;
        };
        for (std::uint64_t t : {3, 9, 17})
            expected.insert({1, t, "fc.weight", "delta"});
    } else if (attack == "above" || attack == "below") {
        const double ratio = attack == "above" ? fenceWithOne * 1.001 : fenceWithOne * 0.999;
        poison = [ratio](std::size_t source, std::uint64_t t, const std::string& tensor, const std::string& slot, double r) {
            return source == 1 && t == 4 && tensor == "fc.weight" && slot == "delta" ? ratio : r;
        };
        if (attack == "above")
            expected.insert({1, 4, "fc.weight", "delta"});
        refused = attack == "above";
    } else if (attack == "ceiling") {
        // Spread over the second segment of tape 1 so that the robust ratio rises past 64 (the
        // fence is then the ceiling), with one comparison just above the ceiling.
        poison = [ceiling](std::size_t source, std::uint64_t t, const std::string& tensor, const std::string& slot, double ratio) {
            if (source != 1 || t < 12 || slot == "update/l2")
                return ratio;
            return t == 23 && tensor == "fc.weight" && slot == "snapshot/param" ? ceiling * 1.001 : 100 + 100 * ratio;
        };
        expected.insert({1, 23, "fc.weight", "snapshot/param"});
    } else {
        // Spread evenly under the fence: the segment of tape 1 after a row scaled by 1.000015
        // (tests/cli: 25 to 588 u x S). The robust ratio follows it; the ceiling bounds it.
        poison = [](std::size_t source, std::uint64_t t, const std::string& tensor, const std::string& slot, double ratio) {
            if (source != 1 || t < 11 || slot == "update/l2")
                return ratio;
            return t == 11 && tensor == "fc.weight" && slot == "snapshot/param" ? 588.0 : 25 + 150 * ratio;
        };
        refused = false;
    }
    const CalibrationSampler sampler = honestTapes(poison);
    const EnvelopeCalibration c = calibrationFrom(sampler, 2);
    const std::vector<CalibrationComparison> outliers = sampler.beyond(c.fence());
    const std::string context = attack.toStdString() + ": " + std::to_string(outliers.size()) + " outliers, robust " + std::to_string(c.robust.value) +
                                ", fence " + std::to_string(c.fence()) + ", envelope " + std::to_string(c.envelope()) + ", max " + std::to_string(c.maxRatio());
    QVERIFY2(c.fence() <= ceiling && c.envelope() <= ceiling, context.c_str());
    if (refused) {
        QVERIFY2(!outliers.empty(), context.c_str());
        for (const CalibrationComparison& o : outliers) {
            // Each named is beyond the fence, and in the poisoned tape, where the poison reaches.
            QVERIFY2(o.ratio > c.fence() && o.source == 1, context.c_str());
            if (!expected.empty())
                QVERIFY2(expected.count({o.source, o.transaction, o.tensor, o.slot}) == 1, (context + ": " + o.tensor + " " + o.slot).c_str());
        }
        if (!expected.empty())
            QVERIFY2(outliers.size() == expected.size(), context.c_str());
        if (attack == "row") {
            QCOMPARE(outliers.front().transaction, std::uint64_t(11));
            QCOMPARE(outliers.front().tensor, std::string("fc.weight"));
            QCOMPARE(outliers.front().slot, std::string("snapshot/param"));
            for (const CalibrationComparison& o : outliers)
                QVERIFY(o.transaction >= 11);
        }
        // Sorted, the largest first.
        for (std::size_t i = 1; i < outliers.size(); ++i)
            QVERIFY(outliers[i - 1].ratio >= outliers[i].ratio);
        return;
    }
    QVERIFY2(outliers.empty(), context.c_str());
    QVERIFY2(c.envelope() >= c.maxRatio(), context.c_str());  // its own comparisons pass
    if (attack == "below")
        QVERIFY2(c.envelope() <= kCalibrationOutlierFactor * honest.maxRatio(), context.c_str());
    if (attack == "spread")
        QVERIFY2(c.envelope() == ceiling, context.c_str());  // at the ceiling, never above
    // Written, the run reads it and uses it as written: never refused, never capped.
    const EnvelopeChoice choice = replayWith(c);
    QVERIFY(choice.calibrationUsed);
    QCOMPARE(choice.source, std::string("calibrated"));
    QCOMPARE(choice.envelope, c.envelope());
    QVERIFY2(choice.note.find("capped") == std::string::npos, choice.note.c_str());
}

// Whatever calibrate writes, replay accepts, with the envelope it says, at most the ceiling
// and at least the largest ratio: over heavy-tailed samples of every size, poisoned or not.
void TestEnvelopeCalibration::whateverCalibrateWritesReplayAccepts()
{
    std::mt19937_64 random(48);  // the engine's sequence is the standard's, on every machine
    auto uniform = [&random]() { return (static_cast<double>(random() >> 11) + 0.5) * 0x1.0p-53; };
    const double ceiling = Tolerance::defaults().envelope;
    int written = 0, atCeiling = 0, refused = 0;
    for (int round = 0; round < 300; ++round) {
        const std::size_t n = 100 + static_cast<std::size_t>(uniform() * 3000);
        const double scale = std::pow(10.0, -2 + 5 * uniform());  // 0.01 to 1000
        const double tail = 1.2 + 3 * uniform();                 // Pareto exponent
        const double zeros = uniform();
        const std::size_t poisoned = round % 3 == 0 ? 0 : static_cast<std::size_t>(uniform() * 0.6 * static_cast<double>(n));
        const double poison = std::pow(10.0, 8 * uniform());
        CalibrationSampler sampler;
        TransactionOutcome outcome;
        for (std::size_t i = 0; i < n; ++i) {
            double ratio = uniform() < zeros ? 0.0 : scale * std::pow(uniform(), -1.0 / tail);
            if (i < poisoned)
                ratio = poison * (0.5 + uniform());
            outcome.index = i / 20;
            outcome.comparisons.push_back(measured(i % 3 == 0 ? "loss" : i % 3 == 1 ? "delta" : "snapshot/param", ratio));
        }
        sampler.add(outcome);
        const EnvelopeCalibration c = calibrationFrom(sampler);
        const std::string context = "round " + std::to_string(round) + ": max " + std::to_string(c.maxRatio()) + ", robust " +
                                    std::to_string(c.robust.value) + ", envelope " + std::to_string(c.envelope());
        QVERIFY2(c.envelope() <= ceiling && c.envelope() >= kMinimumCalibratedEnvelope, context.c_str());
        if (!sampler.beyond(c.fence()).empty()) {
            ++refused;
            QVERIFY2(c.maxRatio() > c.fence(), context.c_str());
            continue;
        }
        ++written;
        atCeiling += c.envelope() == ceiling ? 1 : 0;
        QVERIFY2(c.envelope() >= c.maxRatio(), context.c_str());
        EnvelopeChoice choice;
        try {
            choice = replayWith(c);
        } catch (const FormatError& error) {
            QFAIL((context + ": " + error.what()).c_str());
        }
        QVERIFY2(choice.calibrationUsed && choice.envelope == c.envelope(), (context + ": " + choice.note).c_str());
        QVERIFY2(choice.note.find("capped") == std::string::npos, choice.note.c_str());
    }
    qInfo("%d calibrations written (%d at the ceiling), %d refused", written, atCeiling, refused);
    QVERIFY(written > 50 && atCeiling > 5 && refused > 50);
}

// Files of version 1 (the envelope from the largest ratio alone) still load, round trip as
// version 1, and a run caps their envelope at its own, saying so.
void TestEnvelopeCalibration::versionOneFileStillLoads()
{
    EnvelopeCalibration old = calibrationOf(150, pairOf(1, 2));
    old.version = 1;
    const std::string text = old.toJson();
    QVERIFY(text.find("robust_ratio") == std::string::npos && text.find("\"zkdv_calibration\": 1") != std::string::npos);
    const EnvelopeCalibration back = EnvelopeCalibration::parse(text, "old.json");
    QCOMPARE(back.version, 1);
    QCOMPARE(back.envelope(), 600.0);
    QVERIFY(std::isinf(back.fence()));
    QCOMPARE(back.toJson(), text);
    // A version-1 file of a poisoned tape: 4 x 1e5 capped at the run's 1024.
    EnvelopeCalibration poisoned = old;
    for (KindCalibration& k : poisoned.kinds)
        k.ratio.max = 1e5;
    const LoadedCalibration loaded{"old.json", std::string(64, 'e'), EnvelopeCalibration::parse(poisoned.toJson(), "old.json")};
    const EnvelopeChoice choice = chooseEnvelope(loaded, pairOf(1, 2), true, 1024, false);
    QVERIFY(choice.calibrationUsed);
    QCOMPARE(choice.envelope, 1024.0);
    QVERIFY2(choice.note.find("capped at 1024") != std::string::npos && choice.note.find("version-1") != std::string::npos, choice.note.c_str());
}

QTEST_GUILESS_MAIN(TestEnvelopeCalibration)
#include "test_envelope_calibration.moc"
