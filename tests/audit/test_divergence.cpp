// Divergence metrics: hand-computed ULP distances, histogram bins, NaN/Inf mismatches, norms
// and cosines, every dtype, the bitwise-equal fast path, and a randomized comparison with a
// plain scalar reference over multi-block tensors. ctest runs this suite twice: with the
// kernels the CPU selects and with ZKDV_CPU_CAPABILITY=default (the baseline kernels); each
// run first asserts which kernels it is measuring.

#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "caught.h"
#include "zkdv/audit/divergence.h"
#include "zkdv/audit/divergence_kernels.h"
#include "zkdv/audit/numeric_regime.h"
#include "zkdv/audit/tolerance.h"
#include "zkdv/tape/scalar_value.h"
#include "zkdv/util/error.h"
#include "zkdv/util/sampling_generator.h"

using namespace zkdv;

namespace {

template <typename T>
std::vector<std::uint8_t> bytesOf(const std::vector<T>& values)
{
    std::vector<std::uint8_t> bytes(values.size() * sizeof(T));
    if (!values.empty())
        std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
}

template <typename T>
DivergenceMetrics compare(DType dtype, const std::vector<T>& recorded, const std::vector<T>& replayed)
{
    return computeDivergence(dtype, recorded.size(), bytesOf(recorded), bytesOf(replayed));
}

float floatBits(std::uint32_t bits)
{
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

std::uint32_t bitsOf(float f)
{
    std::uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return bits;
}

double doubleBits(std::uint64_t bits)
{
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
}

float stepUp(float f, int steps)
{
    for (int i = 0; i < steps; ++i)
        f = std::nextafter(f, std::numeric_limits<float>::infinity());
    return f;
}

int bitWidth(std::uint64_t d)
{
    int width = 0;
    while (d) {
        ++width;
        d >>= 1;
    }
    return width;
}

// The kernels this run must measure: AVX2 wherever the CPU has it, unless the run asks for the
// baseline; the baseline everywhere else.
std::string expectedKernels()
{
    const QByteArray capability = qgetenv("ZKDV_CPU_CAPABILITY");
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (capability != "default" && __builtin_cpu_supports("avx2"))
        return "avx2";
#endif
    return "baseline";
}

std::uint64_t histogramTotal(const DivergenceMetrics& m)
{
    std::uint64_t total = 0;
    for (std::uint64_t count : m.ulpHistogram)
        total += count;
    return total;
}

// binary16 by its definition, independent of the library: (-1)^s 2^(e-15) (1 + m/1024), or
// 2^-14 m/1024 for e = 0.
double halfValue(std::uint16_t h)
{
    const int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    const double magnitude = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
    return sign ? -magnitude : magnitude;
}

// The reference: one pair at a time, straight from the definitions in docs/replay.md.
// Norms in long double: its wider exponent range keeps huge F64 values from overflowing.
struct Reference {
    DivergenceMetrics m;
    long double diff2 = 0, rec2 = 0, rep2 = 0, dot = 0;
    double ulpSum = 0;
    std::uint64_t ulpPairs = 0;

    // value: the element as a double; position: its ordered position (sign-magnitude to
    // signed); nan/inf: classification.
    void add(double x, double y, std::int64_t posX, std::int64_t posY, bool bitsEqual)
    {
        ++m.elements;
        m.bitwiseEqual = m.bitwiseEqual && bitsEqual;
        const bool nanX = std::isnan(x), nanY = std::isnan(y);
        if (nanX != nanY) {
            ++m.nanMismatches;
            return;
        }
        if (!nanX && (std::isinf(x) || std::isinf(y)) && x != y) {
            ++m.infMismatches;
            return;
        }
        const std::uint64_t d = nanX ? 0
                                     : (posX > posY ? static_cast<std::uint64_t>(posX) - static_cast<std::uint64_t>(posY)
                                                    : static_cast<std::uint64_t>(posY) - static_cast<std::uint64_t>(posX));
        ++m.ulpHistogram[static_cast<std::size_t>(bitWidth(d))];
        m.maxUlp = std::max(m.maxUlp, static_cast<double>(d));
        ulpSum += static_cast<double>(d);
        ++ulpPairs;
        if (std::isfinite(x) && std::isfinite(y)) {
            m.maxAbs = std::max(m.maxAbs, std::fabs(y - x));
            const long double lx = x, ly = y;
            diff2 += (ly - lx) * (ly - lx);
            rec2 += lx * lx;
            rep2 += ly * ly;
            dot += lx * ly;
        }
    }
    DivergenceMetrics finish()
    {
        m.meanUlp = ulpPairs ? ulpSum / static_cast<double>(ulpPairs) : 0.0;
        m.relativeL2 = diff2 == 0   ? 0.0
                       : rec2 == 0 ? std::numeric_limits<double>::infinity()
                                   : static_cast<double>(std::sqrt(diff2 / rec2));
        m.cosine = rec2 == 0 && rep2 == 0 ? 1.0
                   : rec2 == 0 || rep2 == 0 ? 0.0
                                            : static_cast<double>(dot / std::sqrt(rec2 * rep2));
        return m;
    }
};

std::int64_t position32(std::uint32_t bits)
{
    const auto magnitude = static_cast<std::int64_t>(bits & 0x7fffffffu);
    return bits >> 31 ? -magnitude : magnitude;
}

std::int64_t position16(std::uint16_t bits)
{
    const std::int64_t magnitude = bits & 0x7fff;
    return bits >> 15 ? -magnitude : magnitude;
}

std::int64_t position64(std::uint64_t bits)
{
    const auto magnitude = static_cast<std::int64_t>(bits & 0x7fffffffffffffffull);
    return bits >> 63 ? -magnitude : magnitude;
}

bool close(double a, double b, double relative)
{
    if (std::isinf(a) || std::isinf(b))
        return a == b;
    return std::fabs(a - b) <= relative * std::max({std::fabs(a), std::fabs(b), 1e-300});
}

void compareWithReference(const DivergenceMetrics& got, const DivergenceMetrics& want)
{
    QCOMPARE(got.elements, want.elements);
    QCOMPARE(got.bitwiseEqual, want.bitwiseEqual);
    QCOMPARE(got.nanMismatches, want.nanMismatches);
    QCOMPARE(got.infMismatches, want.infMismatches);
    for (std::size_t bin = 0; bin < kUlpHistogramBins; ++bin)
        QCOMPARE(got.ulpHistogram[bin], want.ulpHistogram[bin]);
    QCOMPARE(got.maxUlp, want.maxUlp);
    QCOMPARE(got.maxAbs, want.maxAbs);
    QVERIFY2(close(got.meanUlp, want.meanUlp, 1e-12), qPrintable(QString::number(got.meanUlp, 'g', 17)));
    QVERIFY2(close(got.relativeL2, want.relativeL2, 1e-9), qPrintable(QString::number(got.relativeL2, 'g', 17) + " vs "
                                                                          + QString::number(want.relativeL2, 'g', 17)));
    QVERIFY2(std::fabs(got.cosine - want.cosine) <= 1e-9,
             qPrintable(QString::number(got.cosine, 'g', 17) + " vs " + QString::number(want.cosine, 'g', 17)));
}

}  // namespace

class TestDivergence : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void adjacentFloatsAreOneUlpApart();
    void stepsOfOneUlp_data();
    void stepsOfOneUlp();
    void signedZerosCoincide();
    void distancesAcrossZeroAndAtTheExtremes();
    void histogramBins();
    void nanAndInfMismatches();
    void mismatchesStayOutOfMaxAbs();
    void relativeL2AndCosineByHand();
    void zeroNorms();
    void doublesAndScalars();
    void extremeDoublesKeepTheirNorms();
    void halfAndBfloat16();
    void halfConversionIsExact();
    void integersAndBool();
    void fastPathMatchesSlowPath();
    void matchesScalarReference_data();
    void matchesScalarReference();
    void emptyTensors();
    void sizeMismatchThrows();
    void envelopeIsRelativeToTheModelsScale();
    void regimeFollowsTheTwoEnvironments();
};

void TestDivergence::initTestCase()
{
    qInfo("divergence kernels: %s (ZKDV_CPU_CAPABILITY=%s)", divergenceKernels(), qgetenv("ZKDV_CPU_CAPABILITY").constData());
    QCOMPARE(std::string(divergenceKernels()), expectedKernels());
}

void TestDivergence::adjacentFloatsAreOneUlpApart()
{
    const float one = 1.0f;
    const float next = std::nextafter(one, 2.0f);
    const DivergenceMetrics m = compare(DType::F32, std::vector<float>{one}, std::vector<float>{next});
    QCOMPARE(m.elements, std::uint64_t{1});
    QVERIFY(!m.bitwiseEqual);
    QCOMPARE(m.maxUlp, 1.0);
    QCOMPARE(m.meanUlp, 1.0);
    QCOMPARE(m.ulpHistogram[1], std::uint64_t{1});
    QCOMPARE(histogramTotal(m), std::uint64_t{1});
    QCOMPARE(m.maxAbs, std::ldexp(1.0, -23));
    QCOMPARE(m.relativeL2, std::ldexp(1.0, -23));
    QCOMPARE(m.nanMismatches + m.infMismatches, std::uint64_t{0});
}

void TestDivergence::stepsOfOneUlp_data()
{
    QTest::addColumn<float>("base");
    QTest::addColumn<int>("steps");
    for (int k : {1, 2, 3, 4, 7, 8, 1000, 65535, 65536, 1 << 20}) {
        QTest::addRow("1.0 + %d ulp", k) << 1.0f << k;
        QTest::addRow("-3.5 + %d ulp", k) << -3.5f << k;
    }
    QTest::addRow("denormal 0 + 5 ulp") << 0.0f << 5;
}

void TestDivergence::stepsOfOneUlp()
{
    QFETCH(float, base);
    QFETCH(int, steps);
    const float moved = stepUp(base, steps);
    std::vector<float> recorded(37, base), replayed(37, base);
    replayed[20] = moved;  // one pair in a 37-element tensor: a partial vector step too
    const DivergenceMetrics m = compare(DType::F32, recorded, replayed);
    QCOMPARE(m.maxUlp, static_cast<double>(steps));
    QCOMPARE(m.meanUlp, static_cast<double>(steps) / 37.0);
    QCOMPARE(m.ulpHistogram[0], std::uint64_t{36});
    QCOMPARE(m.ulpHistogram[static_cast<std::size_t>(bitWidth(static_cast<std::uint64_t>(steps)))], std::uint64_t{1});
    QCOMPARE(m.maxAbs, std::fabs(static_cast<double>(moved) - static_cast<double>(base)));
}

void TestDivergence::signedZerosCoincide()
{
    const DivergenceMetrics m = compare(DType::F32, std::vector<float>{0.0f, 1.0f}, std::vector<float>{-0.0f, 1.0f});
    QVERIFY(!m.bitwiseEqual);  // the bytes differ
    QCOMPARE(m.maxUlp, 0.0);
    QCOMPARE(m.ulpHistogram[0], std::uint64_t{2});
    QCOMPARE(m.maxAbs, 0.0);
    QCOMPARE(m.relativeL2, 0.0);
    QCOMPARE(m.cosine, 1.0);

    const DivergenceMetrics d = compare(DType::F64, std::vector<double>{-0.0}, std::vector<double>{0.0});
    QVERIFY(!d.bitwiseEqual);
    QCOMPARE(d.maxUlp, 0.0);
    QCOMPARE(d.ulpHistogram[0], std::uint64_t{1});

    // The smallest denormals either side of zero are 2 apart (one step to zero each).
    const DivergenceMetrics tiny =
        compare(DType::F32, std::vector<float>{floatBits(0x00000001u)}, std::vector<float>{floatBits(0x80000001u)});
    QCOMPARE(tiny.maxUlp, 2.0);
    QCOMPARE(tiny.ulpHistogram[2], std::uint64_t{1});
}

void TestDivergence::distancesAcrossZeroAndAtTheExtremes()
{
    // -1 vs 1: 2 * 0x3f800000 positions, beyond the fast kernel's 2^24 (full kernel).
    DivergenceMetrics m = compare(DType::F32, std::vector<float>{-1.0f}, std::vector<float>{1.0f});
    QCOMPARE(m.maxUlp, 2.0 * 0x3f800000);
    QCOMPARE(m.ulpHistogram[31], std::uint64_t{1});
    QCOMPARE(m.maxAbs, 2.0);
    // -2 vs 2: exactly 2^31 positions (wraps to INT32_MIN in 32-bit arithmetic).
    m = compare(DType::F32, std::vector<float>{-2.0f}, std::vector<float>{2.0f});
    QCOMPARE(m.maxUlp, 2147483648.0);
    QCOMPARE(m.ulpHistogram[32], std::uint64_t{1});
    // -max vs max: the largest finite distance, 2 * 0x7f7fffff.
    const float largest = std::numeric_limits<float>::max();
    m = compare(DType::F32, std::vector<float>{-largest, 1.0f}, std::vector<float>{largest, stepUp(1.0f, 3)});
    QCOMPARE(m.maxUlp, 2.0 * 0x7f7fffff);
    QCOMPARE(m.meanUlp, (2.0 * 0x7f7fffff + 3.0) / 2.0);
    QCOMPARE(m.ulpHistogram[32], std::uint64_t{1});
    QCOMPARE(m.ulpHistogram[2], std::uint64_t{1});
    // Doubles: -1 vs 1 is 2 * 0x3ff0000000000000 positions.
    m = compare(DType::F64, std::vector<double>{-1.0}, std::vector<double>{1.0});
    QCOMPARE(m.maxUlp, 2.0 * static_cast<double>(0x3ff0000000000000ull));
    QCOMPARE(m.ulpHistogram[63], std::uint64_t{1});
    // -max vs max: 2 * 0x7fefffffffffffff, above 2^63.
    const double dmax = std::numeric_limits<double>::max();
    m = compare(DType::F64, std::vector<double>{-dmax}, std::vector<double>{dmax});
    QCOMPARE(m.ulpHistogram[64], std::uint64_t{1});
    QCOMPARE(m.maxUlp, 2.0 * static_cast<double>(0x7fefffffffffffffull));
}

void TestDivergence::histogramBins()
{
    // Distances 0, 1, 2, 3, 4, 7, 8, 15, 16, 2^23: bins 0, 1, 2, 2, 3, 3, 4, 4, 5, 24.
    const std::vector<int> distances = {0, 1, 2, 3, 4, 7, 8, 15, 16, 1 << 23};
    std::vector<float> recorded, replayed;
    for (int d : distances) {
        recorded.push_back(0.75f);
        replayed.push_back(stepUp(0.75f, d));
    }
    const DivergenceMetrics m = compare(DType::F32, recorded, replayed);
    UlpHistogram want{};
    want[0] = 1;
    want[1] = 1;
    want[2] = 2;
    want[3] = 2;
    want[4] = 2;
    want[5] = 1;
    want[24] = 1;
    for (std::size_t bin = 0; bin < kUlpHistogramBins; ++bin)
        QCOMPARE(m.ulpHistogram[bin], want[bin]);
    QCOMPARE(m.maxUlp, static_cast<double>(1 << 23));
    QCOMPARE(m.meanUlp, (0 + 1 + 2 + 3 + 4 + 7 + 8 + 15 + 16 + (1 << 23)) / 10.0);
}

void TestDivergence::nanAndInfMismatches()
{
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float otherNan = floatBits(0x7fc00123u);
    const float inf = std::numeric_limits<float>::infinity();
    //                           NaN/1 1/NaN inf/inf inf/-inf -inf/5 NaN/NaN' 2/2  inf/NaN
    const std::vector<float> recorded = {nan, 1.0f, inf, inf, -inf, nan, 2.0f, inf};
    const std::vector<float> replayed = {1.0f, nan, inf, -inf, 5.0f, otherNan, 2.0f, nan};
    const DivergenceMetrics m = compare(DType::F32, recorded, replayed);
    QVERIFY(!m.bitwiseEqual);
    QCOMPARE(m.nanMismatches, std::uint64_t{3});  // one side NaN (inf/NaN counts as NaN)
    QCOMPARE(m.infMismatches, std::uint64_t{2});
    QVERIFY(m.finiteMismatch());
    // inf/inf, NaN/NaN' (equal for ULP purposes) and 2/2: distance 0; mismatches left out.
    QCOMPARE(m.ulpHistogram[0], std::uint64_t{3});
    QCOMPARE(histogramTotal(m), std::uint64_t{3});
    QCOMPARE(m.maxUlp, 0.0);
    QCOMPARE(m.meanUlp, 0.0);
    QCOMPARE(m.maxAbs, 0.0);
    QCOMPARE(m.relativeL2, 0.0);
    QCOMPARE(m.cosine, 1.0);

    // The same across a multi-block tensor: non-finite pairs in one block only.
    std::vector<float> a(5000, 1.5f), b(5000, 1.5f);
    b[10] = stepUp(1.5f, 2);
    a[3000] = nan;
    b[4000] = -inf;
    const DivergenceMetrics big = compare(DType::F32, a, b);
    QCOMPARE(big.nanMismatches, std::uint64_t{1});
    QCOMPARE(big.infMismatches, std::uint64_t{1});
    QCOMPARE(histogramTotal(big), std::uint64_t{4998});
    QCOMPARE(big.ulpHistogram[2], std::uint64_t{1});
    QCOMPARE(big.maxUlp, 2.0);
}

void TestDivergence::mismatchesStayOutOfMaxAbs()
{
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const DivergenceMetrics m =
        compare(DType::F32, std::vector<float>{nan, 1.0f, 3.0f}, std::vector<float>{5.0f, 1.5f, 1e30f});
    QCOMPARE(m.nanMismatches, std::uint64_t{1});
    QCOMPARE(m.maxAbs, static_cast<double>(1e30f) - 3.0);
    const DivergenceMetrics inf = compare(DType::F32, std::vector<float>{std::numeric_limits<float>::infinity(), 1.0f},
                                          std::vector<float>{1.0f, 1.25f});
    QCOMPARE(inf.infMismatches, std::uint64_t{1});
    QCOMPARE(inf.maxAbs, 0.25);
    QCOMPARE(inf.ulpHistogram[bitWidth(bitsOf(1.25f) - bitsOf(1.0f))], std::uint64_t{1});
}

void TestDivergence::relativeL2AndCosineByHand()
{
    // (3, 4) -> (3, 5): ||diff|| = 1, ||recorded|| = 5; cosine = 29 / (5 sqrt(34)).
    for (const DivergenceMetrics& m : {compare(DType::F32, std::vector<float>{3, 4}, std::vector<float>{3, 5}),
                                       compare(DType::F64, std::vector<double>{3, 4}, std::vector<double>{3, 5})}) {
        QCOMPARE(m.relativeL2, 0.2);
        QVERIFY(std::fabs(m.cosine - 29.0 / (5.0 * std::sqrt(34.0))) < 1e-15);
        QCOMPARE(m.maxAbs, 1.0);
    }
    // Opposite: cosine -1, relative L2 2.
    DivergenceMetrics m = compare(DType::F32, std::vector<float>{1, 0}, std::vector<float>{-1, 0});
    QCOMPARE(m.cosine, -1.0);
    QCOMPARE(m.relativeL2, 2.0);
    // Orthogonal: cosine 0, relative L2 sqrt(2).
    m = compare(DType::F32, std::vector<float>{1, 0}, std::vector<float>{0, 1});
    QCOMPARE(m.cosine, 0.0);
    QCOMPARE(m.relativeL2, std::sqrt(2.0));
    // Scaled copy: cosine 1 (to rounding), relative L2 = the scale - 1.
    m = compare(DType::F64, std::vector<double>{1, 2, 3, 4}, std::vector<double>{2, 4, 6, 8});
    QVERIFY(std::fabs(m.cosine - 1.0) < 1e-15);
    QCOMPARE(m.relativeL2, 1.0);
}

void TestDivergence::zeroNorms()
{
    // Recorded all zero, replayed not: relative L2 infinite, cosine 0.
    DivergenceMetrics m = compare(DType::F32, std::vector<float>{0, 0}, std::vector<float>{0, 1});
    QVERIFY(std::isinf(m.relativeL2));
    QCOMPARE(m.cosine, 0.0);
    // Replayed all zero, recorded not: relative L2 1, cosine 0.
    m = compare(DType::F32, std::vector<float>{0, 2}, std::vector<float>{0, 0});
    QCOMPARE(m.relativeL2, 1.0);
    QCOMPARE(m.cosine, 0.0);
    // Both zero (bytes differ by the sign of zero): 0/0 = 0, cosine 1.
    m = compare(DType::F32, std::vector<float>{0, -0.0f}, std::vector<float>{-0.0f, 0});
    QCOMPARE(m.relativeL2, 0.0);
    QCOMPARE(m.cosine, 1.0);
}

void TestDivergence::doublesAndScalars()
{
    DivergenceMetrics m = compareScalars(1.0, std::nextafter(1.0, 2.0));
    QCOMPARE(m.maxUlp, 1.0);
    QCOMPARE(m.maxAbs, std::ldexp(1.0, -52));
    m = compareScalars(0.3, 0.1 + 0.2);  // the classic: one ULP apart
    QCOMPARE(m.maxUlp, 1.0);
    QVERIFY(!m.bitwiseEqual);
    m = compareScalars(2.5, 2.5);
    QVERIFY(m.bitwiseEqual);
    QCOMPARE(m.ulpHistogram[0], std::uint64_t{1});
    m = compareScalars(std::numeric_limits<double>::quiet_NaN(), 1.0);
    QCOMPARE(m.nanMismatches, std::uint64_t{1});
    QCOMPARE(m.ulpHistogram[0], std::uint64_t{0});
    m = compareScalars(1.0, std::numeric_limits<double>::infinity());
    QCOMPARE(m.infMismatches, std::uint64_t{1});
    // A double 2^40 ULPs away (high-half bin arithmetic).
    m = compareScalars(1.0, doubleBits(0x3ff0000000000000ull + (1ull << 40)));
    QCOMPARE(m.maxUlp, std::ldexp(1.0, 40));
    QCOMPARE(m.ulpHistogram[41], std::uint64_t{1});
}

void TestDivergence::extremeDoublesKeepTheirNorms()
{
    // Squares beyond the double range: 1e200^2 overflows.
    DivergenceMetrics m = compare(DType::F64, std::vector<double>{1e200, 1e200}, std::vector<double>{1e200, 2e200});
    QVERIFY2(std::fabs(m.relativeL2 - 1.0 / std::sqrt(2.0)) < 1e-12, qPrintable(QString::number(m.relativeL2)));
    QVERIFY2(std::fabs(m.cosine - 3.0 / std::sqrt(10.0)) < 1e-12, qPrintable(QString::number(m.cosine)));
    QCOMPARE(m.maxAbs, 2e200 - 1e200);
    // ... and 1e-200^2 underflows to zero.
    m = compare(DType::F64, std::vector<double>{1e-200}, std::vector<double>{2e-200});
    QVERIFY2(std::fabs(m.relativeL2 - 1.0) < 1e-12, qPrintable(QString::number(m.relativeL2)));
    QCOMPARE(m.cosine, 1.0);
    m = compare(DType::F64, std::vector<double>{1e-200, 0.0}, std::vector<double>{0.0, 1e-200});
    QVERIFY2(std::fabs(m.relativeL2 - std::sqrt(2.0)) < 1e-12, qPrintable(QString::number(m.relativeL2)));
    QCOMPARE(m.cosine, 0.0);
    // Norms far apart: the relative L2 is huge but finite, the cosine still exact.
    m = compare(DType::F64, std::vector<double>{1e-290, 0.0}, std::vector<double>{1e-290, 1e10});
    QVERIFY2(std::fabs(m.relativeL2 / 1e300 - 1.0) < 1e-12, qPrintable(QString::number(m.relativeL2)));
    QVERIFY2(std::fabs(m.cosine / 1e-300 - 1.0) < 1e-12, qPrintable(QString::number(m.cosine)));
    // Beyond the double range, the relative L2 is infinite.
    m = compare(DType::F64, std::vector<double>{1e-300}, std::vector<double>{1e100});
    QVERIFY(std::isinf(m.relativeL2));
    QCOMPARE(m.cosine, 1.0);
}

void TestDivergence::halfAndBfloat16()
{
    // F16: 1.0 = 0x3c00, next = 0x3c01 (2^-10 above).
    DivergenceMetrics m = compare(DType::F16, std::vector<std::uint16_t>{0x3c00, 0x0000, 0x8001},
                                  std::vector<std::uint16_t>{0x3c01, 0x0001, 0x0001});
    QCOMPARE(m.ulpHistogram[1], std::uint64_t{2});  // 1 -> next, 0 -> smallest subnormal
    QCOMPARE(m.ulpHistogram[2], std::uint64_t{1});  // -2^-24 -> 2^-24
    QCOMPARE(m.maxUlp, 2.0);
    QCOMPARE(m.maxAbs, std::ldexp(1.0, -10));
    // 0.333251953125 (0x3555) against 0.5 (0x3800): 0x2ab positions.
    m = compare(DType::F16, std::vector<std::uint16_t>{0x3555}, std::vector<std::uint16_t>{0x3800});
    QCOMPARE(m.maxUlp, static_cast<double>(0x3800 - 0x3555));
    QCOMPARE(m.maxAbs, 0.5 - 0.333251953125);
    // F16 Inf and NaN: 0x7c00 is +Inf, 0x7e00 a NaN, 0xfc00 -Inf.
    m = compare(DType::F16, std::vector<std::uint16_t>{0x7c00, 0x7c00, 0x7e00, 0x3c00},
                std::vector<std::uint16_t>{0x3c00, 0x7c00, 0x3c00, 0xfc00});
    QCOMPARE(m.infMismatches, std::uint64_t{2});
    QCOMPARE(m.nanMismatches, std::uint64_t{1});
    QCOMPARE(m.ulpHistogram[0], std::uint64_t{1});
    // F16 largest finite 65504 (0x7bff) against -65504: 2 * 0x7bff positions.
    m = compare(DType::F16, std::vector<std::uint16_t>{0x7bff}, std::vector<std::uint16_t>{0xfbff});
    QCOMPARE(m.maxUlp, 2.0 * 0x7bff);
    QCOMPARE(m.maxAbs, 2.0 * 65504);
    QCOMPARE(m.relativeL2, 2.0);

    // BF16: 1.0 = 0x3f80, next = 0x3f81 (2^-7 above); -0 against +0.
    m = compare(DType::BF16, std::vector<std::uint16_t>{0x3f80, 0x8000, 0x4040},
                std::vector<std::uint16_t>{0x3f81, 0x0000, 0x4040});
    QCOMPARE(m.maxUlp, 1.0);
    QCOMPARE(m.maxAbs, std::ldexp(1.0, -7));
    QCOMPARE(m.ulpHistogram[0], std::uint64_t{2});
    QCOMPARE(m.ulpHistogram[1], std::uint64_t{1});
    // BF16 +Inf (0x7f80) against 1.0, NaN (0x7fc0) against NaN.
    m = compare(DType::BF16, std::vector<std::uint16_t>{0x7f80, 0x7fc0}, std::vector<std::uint16_t>{0x3f80, 0x7fc1});
    QCOMPARE(m.infMismatches, std::uint64_t{1});
    QCOMPARE(m.nanMismatches, std::uint64_t{0});
    QCOMPARE(m.ulpHistogram[0], std::uint64_t{1});
}

void TestDivergence::halfConversionIsExact()
{
    // Every finite half against zero: maxAbs must be its exact magnitude, which checks the
    // vectorised binary16 conversion against the definition (and the library's scalar one).
    for (std::uint32_t h = 0; h < 0x10000; ++h) {
        const auto bits = static_cast<std::uint16_t>(h);
        if ((bits & 0x7c00) == 0x7c00)
            continue;
        const double want = std::fabs(halfValue(bits));
        QCOMPARE(static_cast<double>(std::fabs(halfToFloat(bits))), want);
        const DivergenceMetrics m = compare(DType::F16, std::vector<std::uint16_t>{0}, std::vector<std::uint16_t>{bits});
        if (m.maxAbs != want)
            QFAIL(qPrintable(QString("half 0x%1: maxAbs %2, want %3").arg(h, 4, 16, QChar('0')).arg(m.maxAbs).arg(want)));
    }
}

void TestDivergence::integersAndBool()
{
    // I32: distances 2, 0, 200 -> bins 2, 0, 8.
    DivergenceMetrics m = compare(DType::I32, std::vector<std::int32_t>{5, -3, 100}, std::vector<std::int32_t>{7, -3, -100});
    QCOMPARE(m.maxUlp, 200.0);
    QCOMPARE(m.meanUlp, 202.0 / 3.0);
    QCOMPARE(m.maxAbs, 200.0);
    QCOMPARE(m.ulpHistogram[0], std::uint64_t{1});
    QCOMPARE(m.ulpHistogram[2], std::uint64_t{1});
    QCOMPARE(m.ulpHistogram[8], std::uint64_t{1});
    QCOMPARE(m.relativeL2, std::sqrt(4.0 + 40000.0) / std::sqrt(25.0 + 9.0 + 10000.0));
    QCOMPARE(m.nanMismatches + m.infMismatches, std::uint64_t{0});
    // I64 extremes: 2^64 - 1 apart, bin 64.
    m = compare(DType::I64, std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min()},
                std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::max()});
    QCOMPARE(m.maxUlp, 18446744073709551615.0);
    QCOMPARE(m.ulpHistogram[64], std::uint64_t{1});
    // I16, I8, U8.
    m = compare(DType::I16, std::vector<std::int16_t>{-32768}, std::vector<std::int16_t>{32767});
    QCOMPARE(m.maxUlp, 65535.0);
    m = compare(DType::I8, std::vector<std::int8_t>{-128, 5}, std::vector<std::int8_t>{127, 5});
    QCOMPARE(m.maxUlp, 255.0);
    QCOMPARE(m.ulpHistogram[8], std::uint64_t{1});
    m = compare(DType::U8, std::vector<std::uint8_t>{0, 255}, std::vector<std::uint8_t>{255, 0});
    QCOMPARE(m.maxUlp, 255.0);
    QCOMPARE(m.meanUlp, 255.0);
    // Bool: any nonzero byte is true, so 2 equals 1 (but the bytes differ).
    m = compare(DType::Bool, std::vector<std::uint8_t>{0, 1, 2}, std::vector<std::uint8_t>{1, 1, 1});
    QVERIFY(!m.bitwiseEqual);
    QCOMPARE(m.maxUlp, 1.0);
    QCOMPARE(m.ulpHistogram[0], std::uint64_t{2});
    QCOMPARE(m.ulpHistogram[1], std::uint64_t{1});
}

void TestDivergence::fastPathMatchesSlowPath()
{
    // Equal bytes take the fast path; the same values with every zero's sign flipped and a
    // NaN's payload changed take the arithmetic path. Every number but bitwiseEqual agrees.
    SamplingGenerator generator(11);
    std::vector<float> values(10000);
    for (float& v : values)
        v = static_cast<float>(generator.uniform() * 4.0 - 2.0);
    for (std::size_t i = 0; i < values.size(); i += 97)
        values[i] = 0.0f;
    values[5000] = std::numeric_limits<float>::quiet_NaN();
    values[7000] = std::numeric_limits<float>::infinity();
    std::vector<float> flipped = values;
    for (std::size_t i = 0; i < values.size(); i += 97)
        flipped[i] = -0.0f;
    flipped[5000] = floatBits(0x7fc00042u);

    const DivergenceMetrics fast = compare(DType::F32, values, values);
    const DivergenceMetrics slow = compare(DType::F32, values, flipped);
    QVERIFY(fast.bitwiseEqual);
    QVERIFY(!slow.bitwiseEqual);
    QCOMPARE(fast.elements, slow.elements);
    QCOMPARE(fast.maxAbs, slow.maxAbs);
    QCOMPARE(fast.relativeL2, slow.relativeL2);
    QCOMPARE(fast.cosine, slow.cosine);
    QCOMPARE(fast.cosine, 1.0);
    QCOMPARE(fast.maxUlp, slow.maxUlp);
    QCOMPARE(fast.meanUlp, slow.meanUlp);
    QCOMPARE(fast.nanMismatches, slow.nanMismatches);
    QCOMPARE(fast.infMismatches, slow.infMismatches);
    QCOMPARE(fast.ulpHistogram, slow.ulpHistogram);
    QCOMPARE(fast.ulpHistogram[0], std::uint64_t{10000});

    // Same for doubles and halves, where the bytes differ only late (equal prefix re-read).
    std::vector<double> d(9000, 1.25), dFlipped(9000, 1.25);
    d[8500] = 0.0;
    dFlipped[8500] = -0.0;
    const DivergenceMetrics dSlow = compare(DType::F64, d, dFlipped);
    const DivergenceMetrics dFast = compare(DType::F64, d, d);
    QCOMPARE(dSlow.cosine, 1.0);
    QCOMPARE(dSlow.relativeL2, 0.0);
    QCOMPARE(dSlow.ulpHistogram, dFast.ulpHistogram);
    std::vector<std::uint16_t> h(3000, 0x3c00), hFlipped(3000, 0x3c00);
    h[2999] = 0x0000;
    hFlipped[2999] = 0x8000;
    const DivergenceMetrics hSlow = compare(DType::F16, h, hFlipped);
    QCOMPARE(hSlow.cosine, 1.0);
    QCOMPARE(hSlow.ulpHistogram[0], std::uint64_t{3000});
}

void TestDivergence::matchesScalarReference_data()
{
    QTest::addColumn<int>("dtype");
    QTest::addColumn<int>("elements");
    QTest::addColumn<int>("seed");
    const std::vector<std::pair<const char*, DType>> dtypes = {
        {"F32", DType::F32}, {"F64", DType::F64}, {"F16", DType::F16}, {"BF16", DType::BF16}};
    for (const auto& [name, dtype] : dtypes)
        for (int elements : {1, 7, 8, 2047, 2048, 2049, 20000})
            for (int seed : {1, 2, 3})
                QTest::addRow("%s n=%d seed=%d", name, elements, seed) << static_cast<int>(dtype) << elements << seed;
}

void TestDivergence::matchesScalarReference()
{
    // A mix per block: equal blocks, blocks a few ULPs off, blocks with large differences,
    // sign flips, zeros and denormals, and blocks with NaN/Inf on either side.
    QFETCH(int, dtype);
    QFETCH(int, elements);
    QFETCH(int, seed);
    const auto type = static_cast<DType>(dtype);
    SamplingGenerator generator(static_cast<std::uint64_t>(seed) * 1000 + static_cast<std::uint64_t>(elements));
    const std::size_t size = dtypeSize(type);
    std::vector<std::uint8_t> recorded(static_cast<std::size_t>(elements) * size), replayed(recorded.size());
    Reference reference;
    int mode = 0;
    for (int i = 0; i < elements; ++i) {
        if (i % 2048 == 0)
            mode = static_cast<int>(generator.next() % 5);  // 0 equal, 1 ULPs, 2 large, 3 specials, 4 mixed
        const std::uint64_t r = generator.next();
        const int m = mode == 4 ? static_cast<int>(r % 4) : mode;
        const double base = (generator.uniform() - 0.5) * std::ldexp(1.0, static_cast<int>(r >> 60) - 6);
        if (type == DType::F32 || type == DType::F64) {
            const bool isFloat = type == DType::F32;
            std::uint64_t a = isFloat ? bitsOf(static_cast<float>(base)) : 0;
            if (!isFloat)
                std::memcpy(&a, &base, 8);
            std::uint64_t b = a;
            if (m == 1)
                b = a + (r >> 8) % 9 - 4;  // may cross zero's sign: fine, still defined bits
            else if (m == 2)
                b = generator.next();
            else if (m == 3) {
                const std::uint64_t specials32[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7fc00001u, 0, 0x80000000u, 1};
                const std::uint64_t specials64[] = {0x7ff0000000000000ull, 0xfff0000000000000ull, 0x7ff8000000000000ull,
                                                    0x7ff8000000000001ull, 0, 0x8000000000000000ull, 1};
                const auto* specials = isFloat ? specials32 : specials64;
                if (r % 3 == 0)
                    a = specials[(r >> 4) % 7];
                if (r % 5 < 2)
                    b = specials[(r >> 8) % 7];
            }
            if (isFloat) {
                a &= 0xffffffffu;
                b &= 0xffffffffu;
                const auto a32 = static_cast<std::uint32_t>(a), b32 = static_cast<std::uint32_t>(b);
                std::memcpy(&recorded[static_cast<std::size_t>(i) * 4], &a32, 4);
                std::memcpy(&replayed[static_cast<std::size_t>(i) * 4], &b32, 4);
                reference.add(floatBits(a32), floatBits(b32), position32(a32), position32(b32), a32 == b32);
            } else {
                std::memcpy(&recorded[static_cast<std::size_t>(i) * 8], &a, 8);
                std::memcpy(&replayed[static_cast<std::size_t>(i) * 8], &b, 8);
                reference.add(doubleBits(a), doubleBits(b), position64(a), position64(b), a == b);
            }
        } else {
            const bool half = type == DType::F16;
            auto a = static_cast<std::uint16_t>(r >> 16);
            if ((a & (half ? 0x7c00 : 0x7f80)) == (half ? 0x7c00 : 0x7f80) && m != 3)
                a &= 0xbfff;  // keep specials to mode 3
            auto b = a;
            if (m == 1)
                b = static_cast<std::uint16_t>(a + (r >> 40) % 9 - 4);
            else if (m == 2)
                b = static_cast<std::uint16_t>(generator.next());
            else if (m == 3) {
                const std::uint16_t specials[] = {static_cast<std::uint16_t>(half ? 0x7c00 : 0x7f80),
                                                  static_cast<std::uint16_t>(half ? 0xfc00 : 0xff80),
                                                  static_cast<std::uint16_t>(half ? 0x7e00 : 0x7fc0),
                                                  static_cast<std::uint16_t>(half ? 0x7e01 : 0x7fc1), 0, 0x8000, 1};
                if (r % 3 == 0)
                    a = specials[(r >> 4) % 7];
                if (r % 5 < 2)
                    b = specials[(r >> 8) % 7];
            }
            std::memcpy(&recorded[static_cast<std::size_t>(i) * 2], &a, 2);
            std::memcpy(&replayed[static_cast<std::size_t>(i) * 2], &b, 2);
            const double x = half ? halfValue(a) : static_cast<double>(bfloat16ToFloat(a));
            const double y = half ? halfValue(b) : static_cast<double>(bfloat16ToFloat(b));
            const auto special = [&](std::uint16_t v, double value) {
                const std::uint16_t exponent = half ? 0x7c00 : 0x7f80;
                if ((v & exponent) != exponent)
                    return value;
                return (v & (half ? 0x03ff : 0x007f)) ? std::numeric_limits<double>::quiet_NaN()
                                                      : (v & 0x8000 ? -1.0 : 1.0) * std::numeric_limits<double>::infinity();
            };
            reference.add(special(a, x), special(b, y), position16(a), position16(b), a == b);
        }
    }
    const DivergenceMetrics got = computeDivergence(type, static_cast<std::uint64_t>(elements), recorded, replayed);
    compareWithReference(got, reference.finish());
}

void TestDivergence::emptyTensors()
{
    const DivergenceMetrics m = computeDivergence(DType::F32, 0, ByteSpan(), ByteSpan());
    QCOMPARE(m.elements, std::uint64_t{0});
    QVERIFY(m.bitwiseEqual);
    QCOMPARE(histogramTotal(m), std::uint64_t{0});
    QCOMPARE(m.relativeL2, 0.0);
    QCOMPARE(m.cosine, 1.0);
}

void TestDivergence::sizeMismatchThrows()
{
    const std::vector<std::uint8_t> twelve(12), sixteen(16);
    QVERIFY_THROWS_EXCEPTION(Error, computeDivergence(DType::F32, 4, twelve, sixteen));
    QVERIFY_THROWS_EXCEPTION(Error, computeDivergence(DType::F32, 4, sixteen, twelve));
    QVERIFY_THROWS_EXCEPTION(Error, computeDivergence(DType::F64, 4, sixteen, sixteen));
    const std::optional<Error> error = test::caught<Error>([&] { computeDivergence(DType::F32, 4, twelve, sixteen); });
    QVERIFY2(error, "a recorded tensor of 12 bytes for 4 floats was accepted");
    QCOMPARE(std::string(error->what()), std::string("divergence: 4 elements of F32 need 16 bytes per tensor, but the recorded "
                                                     "tensor has 12 and the replayed one 16"));
    QCOMPARE(computeDivergence(DType::F32, 4, sixteen, sixteen).elements, std::uint64_t{4});
}

void TestDivergence::envelopeIsRelativeToTheModelsScale()
{
    // docs/replay.md, "Regimes": the envelope is in units of the dtype's unit roundoff times
    // the model's scale, whatever the compared tensor's own norm.
    const Tolerance tolerance = Tolerance::defaults();
    QVERIFY(tolerance.envelope > 0);
    double ratio = 0.0;
    const double scale = 0.5;  // say, the norm of the model's update
    const double u = std::ldexp(1.0, -24);
    QVERIFY(tolerance.withinEnvelope(DType::F32, tolerance.envelope * u * scale, scale, ratio));
    QCOMPARE(ratio, tolerance.envelope);
    QVERIFY(!tolerance.withinEnvelope(DType::F32, 1.01 * tolerance.envelope * u * scale, scale, ratio));
    // A coarser dtype gets no wider envelope (issue 48, item 1: 1024 bfloat16 units were 4 x the
    // model's scale): its steps compute in float32, and its own grid is allowed apart.
    QVERIFY(tolerance.withinEnvelope(DType::BF16, tolerance.envelope * u * scale, scale, ratio));
    QVERIFY(!tolerance.withinEnvelope(DType::BF16, 1.01 * tolerance.envelope * u * scale, scale, ratio));
    QVERIFY(!tolerance.withinEnvelope(DType::F16, 1.01 * tolerance.envelope * u * scale, scale, ratio));
    // And the ULP bound counts float32 ULPs: 64 of them are no bfloat16 ULP at all.
    QVERIFY(tolerance.ulpBound(DType::BF16) < 1.0 && tolerance.ulpBound(DType::F16) < 1.0);
    QCOMPARE(tolerance.ulpBound(DType::F32), tolerance.maxUlp);
    DivergenceMetrics oneUlp;
    oneUlp.bitwiseEqual = false;
    oneUlp.maxUlp = 55;
    oneUlp.relativeL2 = 0.3;
    QCOMPARE(tolerance.judge(oneUlp, DType::BF16), Verdict::Diverged);  // a BF16 row scaled by 1.3
    QCOMPARE(tolerance.judge(oneUlp, DType::F32), Verdict::WithinTolerance);
    // Integers have no rounding; a zero or non-finite scale admits nothing.
    QVERIFY(!tolerance.withinEnvelope(DType::I64, 0.0, scale, ratio));
    QVERIFY(!tolerance.withinEnvelope(DType::F32, 1e-30, 0.0, ratio));
    QVERIFY(!tolerance.withinEnvelope(DType::F32, 1e-30, std::numeric_limits<double>::infinity(), ratio));
    QVERIFY(!tolerance.withinEnvelope(DType::F32, std::numeric_limits<double>::quiet_NaN(), scale, ratio));
    // The term parses and prints; exact admits nothing.
    QCOMPARE(Tolerance::parse("envelope=100").envelope, 100.0);
    QVERIFY(Tolerance::parse("ulp=1").toString().find(",envelope=") != std::string::npos);
    QVERIFY(!Tolerance::parse("exact").withinEnvelope(DType::F32, 1e-30, scale, ratio));
    QVERIFY_THROWS_EXCEPTION(ToleranceError, Tolerance::parse("envelope=-1"));
}

void TestDivergence::regimeFollowsTheTwoEnvironments()
{
    NumericEnvironment trained;
    trained.cpuVendor = "AuthenticAMD";
    trained.cpuModel = "AMD EPYC";
    trained.cpuFlags = {"avx", "avx2"};
    trained.torchCpuCapability = "AVX2";
    trained.intraOpThreads = 1;
    // Same environment: the strict regime. Another, or none recorded: cross-environment, saying why.
    QCOMPARE(chooseRegime(trained, trained).regime, NumericRegime::SameEnvironment);
    QVERIFY(chooseRegime(trained, trained).reason.empty());
    NumericEnvironment capped = trained;
    capped.torchCpuCapability = "DEFAULT";
    capped.settings["ATEN_CPU_CAPABILITY"] = "default";
    const RegimeChoice choice = chooseRegime(trained, capped);
    QCOMPARE(choice.regime, NumericRegime::CrossEnvironment);
    QVERIFY2(choice.reason.find("torch_cpu_capability \"AVX2\" -> \"DEFAULT\"") != std::string::npos, choice.reason.c_str());
    QCOMPARE(chooseRegime(std::nullopt, trained).regime, NumericRegime::CrossEnvironment);
    QVERIFY(chooseRegime(std::nullopt, trained).reason.find("does not record") != std::string::npos);
    QCOMPARE(regimeName(NumericRegime::CrossEnvironment), std::string_view("cross-environment"));
}

QTEST_GUILESS_MAIN(TestDivergence)
#include "test_divergence.moc"
