// Selection specs and the transactions they choose; replay plans by snapshot segment.
// Pinned vectors come from a separate reimplementation (in this file, and checked once more
// against a Python one), never from the code under test.

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "zkdv/audit/replay_plan.h"
#include "zkdv/audit/selection.h"

using namespace zkdv;

namespace {

// The reference algorithms of docs/replay.md, written out independently.
struct ReferenceGenerator {
    std::uint64_t state;
    std::uint64_t next()
    {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    std::uint64_t below(std::uint64_t m)  // Lemire
    {
        while (true) {
            const unsigned __int128 product = static_cast<unsigned __int128>(next()) * m;
            const auto low = static_cast<std::uint64_t>(product);
            if (low >= (0 - m) % m)
                return static_cast<std::uint64_t>(product >> 64);
        }
    }
};

std::vector<std::uint64_t> referenceFloyd(ReferenceGenerator& g, std::uint64_t n, std::uint64_t k)
{
    std::set<std::uint64_t> chosen;
    for (std::uint64_t j = n - k; j < n; ++j) {
        const std::uint64_t t = g.below(j + 1);
        chosen.insert(chosen.count(t) ? j : t);
    }
    return {chosen.begin(), chosen.end()};
}

SelectionInput tapeInput(std::uint64_t transactions, std::uint64_t interval = 12)
{
    SelectionInput input;
    input.transactionCount = transactions;
    input.snapshotInterval = interval;
    return input;
}

std::vector<std::uint64_t> select(const char* spec, std::uint64_t seed, const SelectionInput& input)
{
    return selectTransactions(SelectionSpec::parse(spec), seed, input);
}

using Picks = std::vector<std::uint64_t>;

bool ascendingUnique(const Picks& picks)
{
    return std::adjacent_find(picks.begin(), picks.end(), [](auto a, auto b) { return a >= b; }) == picks.end();
}

}  // namespace

class TestSelection : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void parseRoundTrips_data();
    void parseRoundTrips();
    void parseErrors_data();
    void parseErrors();
    void parsedFields();
    void allIdsAndRange();
    void idsAndRangeOutsideTheTape();
    void randomIsDeterministic();
    void randomPinnedVector();
    void randomCounts();
    void randomIsUniform();
    void stratifiedAllocation();
    void stratifiedPinnedVector();
    void topQUnionAndTies();
    void topQNeedsNorms();
    void sampled();
    void planSegments();
    void planReachesNextSnapshot();
    void planMissingSnapshot();
};

void TestSelection::parseRoundTrips_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("canonical");
    const char* same[] = {"all", "sampled", "ids:3,17,40", "ids:5,5,1", "ids:0", "range:100-199", "range:7-7",
                          "random:50", "random:5%", "random:0.5%", "random:100%", "random:0.123456789%",
                          "stratified:50", "stratified:5%", "topq:10", "topq:1%", "random:18446744073709551615"};
    for (const char* text : same)
        QTest::newRow(text) << text << text;
    QTest::newRow("leading zeros") << "ids:007,010" << "ids:7,10";
    QTest::newRow("trailing decimal zeros") << "random:5.50%" << "random:5.5%";
    QTest::newRow("integral percent with decimals") << "topq:2.000%" << "topq:2%";
    QTest::newRow("range leading zeros") << "range:01-02" << "range:1-2";
}

void TestSelection::parseRoundTrips()
{
    QFETCH(QString, text);
    QFETCH(QString, canonical);
    const SelectionSpec spec = SelectionSpec::parse(text.toStdString());
    QCOMPARE(QString::fromStdString(spec.toString()), canonical);
    QVERIFY(SelectionSpec::parse(spec.toString()) == spec);
    QVERIFY(SelectionSpec::parse(canonical.toStdString()) == spec);
}

void TestSelection::parseErrors_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("problem");
    QTest::newRow("empty") << "" << "unknown kind";
    QTest::newRow("unknown kind") << "bogus" << "unknown kind \"bogus\"";
    QTest::newRow("upper case") << "ALL" << "unknown kind";
    QTest::newRow("leading space") << " all" << "unknown kind";
    QTest::newRow("all with argument") << "all:3" << "takes no argument";
    QTest::newRow("sampled with argument") << "sampled:1" << "takes no argument";
    QTest::newRow("ids missing colon") << "ids" << "needs an argument";
    QTest::newRow("ids empty") << "ids:" << "empty";
    QTest::newRow("ids empty item") << "ids:1,,2" << "empty id";
    QTest::newRow("ids trailing comma") << "ids:1," << "empty id";
    QTest::newRow("ids non-numeric") << "ids:a" << "expected a transaction index";
    QTest::newRow("ids negative") << "ids:-1" << "expected a transaction index";
    QTest::newRow("ids with space") << "ids:1, 2" << "expected a transaction index";
    QTest::newRow("ids overflow") << "ids:18446744073709551616" << "larger than 2^64 - 1";
    QTest::newRow("range reversed") << "range:5-3" << "reversed";
    QTest::newRow("range single") << "range:5" << "expected FIRST-LAST";
    QTest::newRow("range negative") << "range:-3" << "expected the first";
    QTest::newRow("range trailing") << "range:1-2x" << "expected the last";
    QTest::newRow("random zero") << "random:0" << "at least 1";
    QTest::newRow("random zero percent") << "random:0%" << "not in (0, 100]";
    QTest::newRow("random zero point zero percent") << "random:0.0%" << "not in (0, 100]";
    QTest::newRow("random over 100") << "random:101%" << "not in (0, 100]";
    QTest::newRow("random just over 100") << "random:100.000000001%" << "not in (0, 100]";
    QTest::newRow("random bare point") << "random:5.%" << "expected a percentage";
    QTest::newRow("random leading point") << "random:.5%" << "expected a percentage";
    QTest::newRow("random exponent") << "random:1e2%" << "expected a percentage";
    QTest::newRow("random negative percent") << "random:-5%" << "expected a percentage";
    QTest::newRow("random ten decimals") << "random:0.0000000001%" << "more than 9 decimals";
    QTest::newRow("random trailing garbage") << "random:5x" << "expected a count";
    QTest::newRow("random percent garbage") << "random:5%%" << "expected a percentage";
    QTest::newRow("random empty") << "random:" << "found nothing";
    QTest::newRow("random missing colon") << "random" << "needs an argument";
    QTest::newRow("stratified negative") << "stratified:-1" << "expected a count";
    QTest::newRow("topq overflow") << "topq:99999999999999999999" << "larger than 2^64 - 1";
    QTest::newRow("topq zero") << "topq:0" << "at least 1";
}

void TestSelection::parseErrors()
{
    QFETCH(QString, text);
    QFETCH(QString, problem);
    try {
        SelectionSpec::parse(text.toStdString());
        QFAIL("no SelectionError");
    } catch (const SelectionError& e) {
        const QString message = QString::fromUtf8(e.what());
        QVERIFY2(message.contains("\"" + text + "\""), qPrintable(message));  // quotes the spec
        QVERIFY2(message.contains(problem), qPrintable(message));
        QVERIFY2(message.contains("accepted forms: all, ids:N[,N...], range:FIRST-LAST, random:N, random:P%"),
                 qPrintable(message));
    }
}

void TestSelection::parsedFields()
{
    SelectionSpec spec = SelectionSpec::parse("ids:3,17,3");
    QCOMPARE(spec.kind, SelectionSpec::Kind::Ids);
    QCOMPARE(spec.ids, (Picks{3, 17, 3}));
    spec = SelectionSpec::parse("range:100-199");
    QCOMPARE(spec.kind, SelectionSpec::Kind::Range);
    QCOMPARE(spec.first, std::uint64_t{100});
    QCOMPARE(spec.last, std::uint64_t{199});
    spec = SelectionSpec::parse("random:5%");
    QVERIFY(spec.isPercent);
    QCOMPARE(spec.percent, 5.0);
    QVERIFY(spec.usesSeed());
    spec = SelectionSpec::parse("stratified:12");
    QVERIFY(!spec.isPercent);
    QCOMPARE(spec.count, std::uint64_t{12});
    QVERIFY(spec.usesSeed());
    QVERIFY(!SelectionSpec::parse("topq:3").usesSeed());
    QVERIFY(!SelectionSpec::parse("all").usesSeed());
    QVERIFY(!(SelectionSpec::parse("random:5") == SelectionSpec::parse("random:5%")));
    QVERIFY(!(SelectionSpec::parse("random:5") == SelectionSpec::parse("stratified:5")));
    QVERIFY(!(SelectionSpec::parse("ids:1,2") == SelectionSpec::parse("ids:2,1")));  // as written
}

void TestSelection::allIdsAndRange()
{
    QCOMPARE(select("all", 0, tapeInput(5)), (Picks{0, 1, 2, 3, 4}));
    QCOMPARE(select("all", 0, tapeInput(0)), Picks{});
    QCOMPARE(select("ids:40,3,17,3", 0, tapeInput(41)), (Picks{3, 17, 40}));  // sorted, duplicates removed
    QCOMPARE(select("range:3-6", 0, tapeInput(10)), (Picks{3, 4, 5, 6}));
    QCOMPARE(select("range:9-9", 0, tapeInput(10)), (Picks{9}));
}

void TestSelection::idsAndRangeOutsideTheTape()
{
    for (const char* spec : {"ids:3,100", "range:95-100", "range:100-120"}) {
        try {
            select(spec, 0, tapeInput(100));
            QFAIL(qPrintable(QString("no SelectionError for ") + spec));
        } catch (const SelectionError& e) {
            const QString message = QString::fromUtf8(e.what());
            QVERIFY2(message.contains("transaction 100 is not on the tape") && message.contains("100 transactions (0-99)"),
                     qPrintable(message));
        }
    }
    QVERIFY_THROWS_EXCEPTION(SelectionError, select("ids:0", 0, tapeInput(0)));
}

void TestSelection::randomIsDeterministic()
{
    const SelectionInput input = tapeInput(1000);
    const Picks a = select("random:20", 42, input);
    QCOMPARE(select("random:20", 42, input), a);
    QCOMPARE(a.size(), std::size_t{20});
    QVERIFY(ascendingUnique(a));
    QVERIFY(a.back() < 1000);
    QVERIFY(select("random:20", 43, input) != a);
    QVERIFY(select("random:20", 0, input) != a);
    // Stratified too.
    const Picks s = select("stratified:20", 7, input);
    QCOMPARE(select("stratified:20", 7, input), s);
    QVERIFY(select("stratified:20", 8, input) != s);
}

void TestSelection::randomPinnedVector()
{
    // random:5 with seed 42 over 100 transactions. [3, 15, 27, 34, 71] is also what a Python
    // reimplementation of splitmix64 + Lemire + Floyd gives.
    ReferenceGenerator generator{42};
    const Picks expected = referenceFloyd(generator, 100, 5);
    QCOMPARE(expected, (Picks{3, 15, 27, 34, 71}));
    QCOMPARE(select("random:5", 42, tapeInput(100)), expected);
    QCOMPARE(select("random:5%", 42, tapeInput(100)), expected);  // 5% of 100 = 5: same draws
    ReferenceGenerator other{43};
    QCOMPARE(select("random:5", 43, tapeInput(100)), referenceFloyd(other, 100, 5));
    QCOMPARE(select("random:5", 43, tapeInput(100)), (Picks{0, 42, 59, 69, 82}));
    // A large tape and a large sample (the dense path of Floyd's algorithm).
    ReferenceGenerator large{99};
    QCOMPARE(select("random:700", 99, tapeInput(1000)), referenceFloyd(large, 1000, 700));
}

void TestSelection::randomCounts()
{
    QCOMPARE(select("random:7%", 1, tapeInput(100)).size(), std::size_t{7});  // 0.07 * 100 would give 8
    QCOMPARE(select("random:0.5%", 1, tapeInput(100)).size(), std::size_t{1});  // ceil(0.5)
    QCOMPARE(select("random:33.3%", 1, tapeInput(10)).size(), std::size_t{4});  // ceil(3.33)
    QCOMPARE(select("random:10%", 1, tapeInput(10)).size(), std::size_t{1});
    QCOMPARE(select("random:0.000000001%", 1, tapeInput(1000)).size(), std::size_t{1});
    QCOMPARE(select("random:100%", 1, tapeInput(17)), select("all", 0, tapeInput(17)));
    QCOMPARE(select("random:17", 1, tapeInput(17)), select("all", 0, tapeInput(17)));
    QCOMPARE(select("random:500", 1, tapeInput(17)), select("all", 0, tapeInput(17)));  // more than the tape
    QCOMPARE(select("random:5", 1, tapeInput(0)), Picks{});
}

void TestSelection::randomIsUniform()
{
    // 5 of 20 over 4,000 seeds: every index expected 1,000 times. Chi-square with 19 degrees
    // of freedom: 60 is far in the tail (p ~ 4e-6); a biased draw lands well above it.
    constexpr int kSeeds = 4000;
    std::vector<int> hits(20, 0);
    std::vector<int> firstPick(20, 0);
    for (int seed = 0; seed < kSeeds; ++seed) {
        const Picks picks = select("random:5", static_cast<std::uint64_t>(seed), tapeInput(20));
        QCOMPARE(picks.size(), std::size_t{5});
        for (std::uint64_t p : picks)
            ++hits[static_cast<std::size_t>(p)];
        ++firstPick[static_cast<std::size_t>(picks.front())];
    }
    double chiSquare = 0.0;
    for (int h : hits) {
        const double expected = kSeeds * 5.0 / 20.0;
        chiSquare += (h - expected) * (h - expected) / expected;
        QVERIFY2(h > 850 && h < 1150, qPrintable(QString::number(h)));
    }
    QVERIFY2(chiSquare < 60.0, qPrintable(QString::number(chiSquare)));
    // The smallest pick of 5 of 20 is 0 with probability 5/20.
    QVERIFY2(std::abs(firstPick[0] - kSeeds / 4) < 150, qPrintable(QString::number(firstPick[0])));
}

void TestSelection::stratifiedAllocation()
{
    for (std::uint64_t n : {1, 5, 12, 13, 30, 100, 257, 1000})
        for (std::uint64_t interval : {1, 5, 12, 50})
            for (std::uint64_t wanted : {1, 2, 7, 50, 999}) {
                SelectionInput input = tapeInput(n, interval);
                SelectionSpec spec = SelectionSpec::parse("stratified:" + std::to_string(wanted));
                const Picks picks = selectTransactions(spec, n + interval + wanted, input);
                QCOMPARE(picks.size(), static_cast<std::size_t>(std::min(n, wanted)));
                QVERIFY(ascendingUnique(picks));
                QVERIFY(picks.empty() || picks.back() < n);
                // Each segment holds floor or ceil of its proportional share.
                const std::uint64_t segments = (n + interval - 1) / interval;
                for (std::uint64_t s = 0; s < segments; ++s) {
                    const std::uint64_t start = s * interval, size = std::min(interval, n - start);
                    const auto inSegment = static_cast<std::uint64_t>(std::count_if(
                        picks.begin(), picks.end(), [&](std::uint64_t p) { return p >= start && p < start + size; }));
                    const std::uint64_t k = std::min(n, wanted);
                    const std::uint64_t floorShare = k * size / n;
                    QVERIFY2(inSegment == floorShare || inSegment == floorShare + 1,
                             qPrintable(QString("n=%1 interval=%2 wanted=%3 segment %4: %5 (share %6)")
                                            .arg(n).arg(interval).arg(wanted).arg(s).arg(inSegment).arg(floorShare)));
                }
            }
    // Percentages: 5% of 1000 = 50, spread 0 or 1 per 12-transaction segment (84 segments).
    const Picks picks = select("stratified:5%", 3, tapeInput(1000));
    QCOMPARE(picks.size(), std::size_t{50});
    QVERIFY_THROWS_EXCEPTION(SelectionError, select("stratified:5", 1, tapeInput(100, 0)));
}

void TestSelection::stratifiedPinnedVector()
{
    // 7 of 30 with a snapshot every 12: segments of 12, 12, 6; quotas 2.8, 2.8, 1.4; the two
    // seats left go to the remainders 0.8, 0.8 (ties to the earlier segment): 3, 3, 1. One
    // generator stream, segments in order.
    ReferenceGenerator generator{42};
    Picks expected;
    const std::uint64_t allocation[] = {3, 3, 1}, sizes[] = {12, 12, 6};
    for (int s = 0; s < 3; ++s)
        for (std::uint64_t p : referenceFloyd(generator, sizes[s], allocation[s]))
            expected.push_back(static_cast<std::uint64_t>(s) * 12 + p);
    QCOMPARE(expected, (Picks{1, 3, 7, 12, 15, 22, 25}));  // also the Python reimplementation's
    QCOMPARE(select("stratified:7", 42, tapeInput(30, 12)), expected);
    // Ties in remainders go to the earlier segment: 2 of 4 equal segments of 3 -> segments 0, 1.
    const Picks tie = select("stratified:2", 5, tapeInput(12, 3));
    QCOMPARE(tie.size(), std::size_t{2});
    QVERIFY(tie[0] < 3 && tie[1] >= 3 && tie[1] < 6);
}

void TestSelection::topQUnionAndTies()
{
    const double nan = std::numeric_limits<double>::quiet_NaN();
    SelectionInput input = tapeInput(6);
    input.parameterCount = 2;
    // Row-major [transaction][parameter].
    const double parameter0[] = {1, 5, 5, 2, nan, 0};
    const double parameter1[] = {3, 3, 3, 3, 3, 3};
    for (int t = 0; t < 6; ++t) {
        input.updateL2.push_back(parameter0[t]);
        input.updateL2.push_back(parameter1[t]);
    }
    // q = 2: parameter 0 -> NaN (4) first, then 5 at 1 (tie with 2: lower index); parameter 1
    // all tied -> 0, 1. United: 0, 1, 4.
    QCOMPARE(select("topq:2", 0, input), (Picks{0, 1, 4}));
    // 50% of 6 = 3 per parameter: {4, 1, 2} and {0, 1, 2}.
    QCOMPARE(select("topq:50%", 0, input), (Picks{0, 1, 2, 4}));
    QCOMPARE(select("topq:1", 0, input), (Picks{0, 4}));
    QCOMPARE(select("topq:6", 0, input), (Picks{0, 1, 2, 3, 4, 5}));
    // -0 and +0 tie: the lower index wins.
    SelectionInput zeros = tapeInput(3);
    zeros.parameterCount = 1;
    zeros.updateL2 = {0.0, -0.0, -1.0};
    QCOMPARE(select("topq:1", 0, zeros), (Picks{0}));
    zeros.updateL2 = {-0.0, 0.0, -1.0};
    QCOMPARE(select("topq:2", 0, zeros), (Picks{0, 1}));
}

void TestSelection::topQNeedsNorms()
{
    SelectionInput input = tapeInput(4);
    input.parameterCount = 2;
    input.updateL2 = {1, 2, 3};
    QVERIFY_THROWS_EXCEPTION(SelectionError, select("topq:1", 0, input));
    input.parameterCount = 0;
    input.updateL2.clear();
    QCOMPARE(select("topq:1", 0, input), Picks{});
}

void TestSelection::sampled()
{
    SelectionInput input = tapeInput(6);
    input.hasSampledCheck = {false, true, false, false, true, true};
    QCOMPARE(select("sampled", 0, input), (Picks{1, 4, 5}));
    input.hasSampledCheck.pop_back();
    QVERIFY_THROWS_EXCEPTION(SelectionError, select("sampled", 0, input));
}

void TestSelection::planSegments()
{
    // Interval 12, snapshots at 0, 12, 24, 36.
    const std::vector<std::uint64_t> snapshots = {0, 12, 24, 36};
    std::vector<std::uint64_t> unplannable;
    const ReplayPlan plan = planReplay({3, 5, 13, 30, 35, 40}, 12, snapshots, &unplannable);
    QVERIFY(unplannable.empty());
    QCOMPARE(plan.segments.size(), std::size_t{4});
    QCOMPARE(plan.segments[0].snapshot, std::uint64_t{0});
    QCOMPARE(plan.segments[0].lastTransaction, std::uint64_t{5});
    QCOMPARE(plan.segments[0].selected, (Picks{3, 5}));
    QCOMPARE(plan.segments[0].length(), std::uint64_t{6});
    QCOMPARE(plan.segments[1].snapshot, std::uint64_t{12});
    QCOMPARE(plan.segments[1].lastTransaction, std::uint64_t{13});
    QCOMPARE(plan.segments[2].snapshot, std::uint64_t{24});
    QCOMPARE(plan.segments[2].selected, (Picks{30, 35}));
    QCOMPARE(plan.segments[2].lastTransaction, std::uint64_t{35});
    QCOMPARE(plan.segments[3].snapshot, std::uint64_t{36});
    QCOMPARE(plan.segments[3].length(), std::uint64_t{5});
    QCOMPARE(plan.replayedTransactions(), std::uint64_t{6 + 2 + 12 + 5});
    QVERIFY(planReplay({}, 12, snapshots).segments.empty());
    QCOMPARE(planReplay({}, 12, snapshots).replayedTransactions(), std::uint64_t{0});
}

void TestSelection::planReachesNextSnapshot()
{
    const std::vector<std::uint64_t> snapshots = {0, 12, 24};
    const ReplayPlan plan = planReplay({11, 23, 30, 35}, 12, snapshots);
    QCOMPARE(plan.segments.size(), std::size_t{3});
    QVERIFY(plan.segments[0].reachesNextSnapshot);   // 11 is the last of 0..11, snapshot 12 exists
    QVERIFY(plan.segments[1].reachesNextSnapshot);   // 23, snapshot 24 exists
    QVERIFY(!plan.segments[2].reachesNextSnapshot);  // 35 is the last of 24..35, but no snapshot 36
    QVERIFY(!planReplay({10}, 12, snapshots).segments[0].reachesNextSnapshot);  // not the last
    // A 1.5 tape of 30 transactions ends with the final snapshot 30 (tape format 2.4): the
    // last segment, 24..29, reaches it from its last transaction, whichever selection got there.
    const std::vector<std::uint64_t> withFinal = {0, 12, 24, 30};
    QVERIFY(planReplay({29}, 12, withFinal).segments[0].reachesNextSnapshot);
    QVERIFY(planReplay({25, 29}, 12, withFinal).segments[0].reachesNextSnapshot);
    QVERIFY(!planReplay({28}, 12, withFinal).segments[0].reachesNextSnapshot);
    QVERIFY(planReplay({11}, 12, withFinal).segments[0].reachesNextSnapshot);
}

void TestSelection::planMissingSnapshot()
{
    std::vector<std::uint64_t> unplannable;
    const ReplayPlan plan = planReplay({2, 14, 15, 26}, 12, {0, 24}, &unplannable);
    QCOMPARE(unplannable, (Picks{14, 15}));
    QCOMPARE(plan.segments.size(), std::size_t{2});
    QCOMPARE(plan.segments[0].snapshot, std::uint64_t{0});
    QCOMPARE(plan.segments[1].snapshot, std::uint64_t{24});
    QVERIFY(!plan.segments[0].reachesNextSnapshot);
    // Without a list to report them, unplannable transactions are only left out.
    QCOMPARE(planReplay({14}, 12, {0, 24}).segments.size(), std::size_t{0});
}

QTEST_GUILESS_MAIN(TestSelection)
#include "test_selection.moc"
