// The shard plan of a sharded replay (core/audit/shard_plan.h): every segment in exactly one
// shard, the shards balanced within the costliest segment, and the plan a pure function of its
// inputs, pinned here so that a change of it (which would split one audit differently on two
// machines of different builds) is seen.

#include <QtTest>

#include <numeric>
#include <set>

#include "zkdv/audit/shard_plan.h"
#include "zkdv/util/error.h"

using namespace zkdv;

namespace {

// Every transaction selected, segments of `interval` over `transactions`.
ReplayPlan everything(std::uint64_t transactions, std::uint64_t interval)
{
    std::vector<std::uint64_t> selected(transactions), snapshots;
    std::iota(selected.begin(), selected.end(), std::uint64_t(0));
    for (std::uint64_t s = 0; s <= transactions; s += interval)
        snapshots.push_back(s);
    return planReplay(selected, interval, snapshots);
}

// Wall times from a fixed splitmix64 stream: 1 to 20 ms (all recorded; aPinnedPlan has an
// unrecorded one).
std::vector<std::uint64_t> wallTimes(std::uint64_t transactions)
{
    std::vector<std::uint64_t> times;
    std::uint64_t state = 42;
    for (std::uint64_t i = 0; i < transactions; ++i) {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        times.push_back(1'000'000 + z % 19'000'000);
    }
    return times;
}

}  // namespace

class TestShardPlan : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void everySegmentInExactlyOneShardAndBalanced_data()
    {
        QTest::addColumn<int>("transactions");
        QTest::addColumn<int>("interval");
        QTest::addColumn<int>("shards");
        QTest::newRow("1000/12 in 7") << 1000 << 12 << 7;
        QTest::newRow("1000/12 in 1") << 1000 << 12 << 1;
        QTest::newRow("50/12 in 9: more shards than segments") << 50 << 12 << 9;
        QTest::newRow("5000/6 in 64") << 5000 << 6 << 64;
    }
    void everySegmentInExactlyOneShardAndBalanced()
    {
        QFETCH(int, transactions);
        QFETCH(int, interval);
        QFETCH(int, shards);
        const ReplayPlan plan = everything(transactions, interval);
        const std::vector<std::uint64_t> times = wallTimes(transactions);
        const ShardPlan sharded = planShards(plan, times, shards);
        QCOMPARE(sharded.shards.size(), std::size_t(shards));
        std::multiset<std::size_t> seen;
        std::uint64_t replayed = 0, most = 0, least = UINT64_MAX;
        for (const ReplayShard& shard : sharded.shards) {
            seen.insert(shard.segments.begin(), shard.segments.end());
            replayed += sharded.shardPlan(plan, shard.index).replayedTransactions();
            QCOMPARE(shard.transactions, sharded.shardPlan(plan, shard.index).replayedTransactions());
            most = std::max(most, shard.costNs);
            least = std::min(least, shard.costNs);
            QVERIFY(std::is_sorted(shard.segments.begin(), shard.segments.end()));
        }
        QCOMPARE(seen.size(), plan.segments.size());
        QCOMPARE(std::set<std::size_t>(seen.begin(), seen.end()).size(), plan.segments.size());
        QCOMPARE(replayed, plan.replayedTransactions());
        // Balanced within the costliest segment.
        std::uint64_t largest = 0;
        for (const ReplaySegment& segment : plan.segments) {
            std::uint64_t cost = 0;
            for (std::uint64_t t = segment.snapshot; t <= segment.lastTransaction; ++t)
                cost += times[t];
            largest = std::max(largest, cost);
        }
        if (plan.segments.size() >= std::size_t(shards))
            QVERIFY2(most - least <= largest, qPrintable(QString::number(most - least)));
        // The same inputs, the same plan.
        const ShardPlan again = planShards(plan, times, shards);
        for (int i = 0; i < shards; ++i)
            QCOMPARE(again.shards[i].segments, sharded.shards[i].segments);
    }

    // Pinned: 10 segments of 12 (the last of 4) with these costs, in 3 shards.
    void aPinnedPlan()
    {
        const ReplayPlan plan = everything(112, 12);
        QCOMPARE(plan.segments.size(), std::size_t(10));
        std::vector<std::uint64_t> times(112, 1000);
        for (std::uint64_t t = 24; t < 36; ++t)
            times[t] = 5000;  // segment 2 is the costliest
        times[100] = 0;       // unrecorded: the median, 1000
        const ShardPlan sharded = planShards(plan, times, 3);
        // By hand: segment 2 (60 µs) alone on shard 0; the eight of 12 µs alternate between
        // shards 1 and 2 (ties to the lower index); the last (4 transactions, 4 µs) goes to
        // shard 1, tied with shard 2 at 48 µs.
        QCOMPARE(sharded.shards[0].segments, (std::vector<std::size_t>{2}));
        QCOMPARE(sharded.shards[1].segments, (std::vector<std::size_t>{0, 3, 5, 7, 9}));
        QCOMPARE(sharded.shards[2].segments, (std::vector<std::size_t>{1, 4, 6, 8}));
        QCOMPARE(sharded.shards[0].costNs, std::uint64_t(60'000));
        QCOMPARE(sharded.shards[1].costNs, std::uint64_t(52'000));
        QCOMPARE(sharded.shards[2].costNs, std::uint64_t(48'000));
    }

    void aShardCountOutOfRangeIsRefused()
    {
        const ReplayPlan plan = everything(24, 12);
        QVERIFY_THROWS_EXCEPTION(Error, planShards(plan, {}, 0));
        QVERIFY_THROWS_EXCEPTION(Error, planShards(plan, {}, kMaxShards + 1));
        QVERIFY_THROWS_EXCEPTION(Error, planShards(plan, {}, 2).shardPlan(plan, 2));
        // No recorded times: every transaction costs the same.
        const ShardPlan even = planShards(plan, {}, 2);
        QCOMPARE(even.shards[0].costNs, even.shards[1].costNs);
    }
};

QTEST_APPLESS_MAIN(TestShardPlan)
#include "test_shard_plan.moc"
