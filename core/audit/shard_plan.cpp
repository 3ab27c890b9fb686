#include "zkdv/audit/shard_plan.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <queue>

#include "zkdv/util/error.h"

namespace zkdv {

namespace {

// What an unrecorded transaction is taken to cost: the median of the recorded ones, so a tape
// that records some times still balances by them.
std::uint64_t defaultCost(const std::vector<std::uint64_t>& wallTimeNs)
{
    std::vector<std::uint64_t> recorded;
    for (std::uint64_t ns : wallTimeNs)
        if (ns > 0)
            recorded.push_back(ns);
    if (recorded.empty())
        return 1;
    std::nth_element(recorded.begin(), recorded.begin() + static_cast<std::ptrdiff_t>(recorded.size() / 2), recorded.end());
    return recorded[recorded.size() / 2];
}

// A decimal number without sign, spaces or leading zeros ("07" is a typo, not 7).
std::optional<unsigned> parseCount(const std::string& text)
{
    if (text.empty() || text.size() > 6 || (text.size() > 1 && text[0] == '0'))
        return std::nullopt;
    unsigned value = 0;
    for (char c : text) {
        if (c < '0' || c > '9')
            return std::nullopt;
        value = value * 10 + static_cast<unsigned>(c - '0');
    }
    return value;
}

}  // namespace

ShardSpec ShardSpec::parse(const std::string& text)
{
    const std::size_t slash = text.find('/');
    const std::optional<unsigned> index = slash == std::string::npos ? std::nullopt : parseCount(text.substr(0, slash));
    const std::optional<unsigned> count = slash == std::string::npos ? std::nullopt : parseCount(text.substr(slash + 1));
    if (!index || !count)
        throw Error("a shard is written I/N (shard I of N, I from 0), not \"" + text + "\"");
    if (*count < 1 || *count > kMaxShards)
        throw Error("a replay splits into 1 to " + std::to_string(kMaxShards) + " shards, not " + std::to_string(*count));
    if (*index >= *count)
        throw Error("shard " + text + " does not exist: the shards of " + std::to_string(*count) + " are 0 to " + std::to_string(*count - 1));
    return ShardSpec{*index, *count};
}

std::string ShardSpec::toString() const { return std::to_string(index) + "/" + std::to_string(count); }

ReplayPlan ShardPlan::shardPlan(const ReplayPlan& plan, unsigned index) const
{
    if (index >= shards.size())
        throw Error("shard " + std::to_string(index) + " of a plan of " + std::to_string(shards.size()) + " shards");
    ReplayPlan part;
    for (std::size_t segment : shards[index].segments)
        part.segments.push_back(plan.segments.at(segment));
    return part;
}

ShardPlan planShards(const ReplayPlan& plan, const std::vector<std::uint64_t>& wallTimeNs, unsigned count)
{
    if (count < 1 || count > kMaxShards)
        throw Error("a replay splits into 1 to " + std::to_string(kMaxShards) + " shards, not " + std::to_string(count));
    const std::uint64_t fallback = defaultCost(wallTimeNs);
    std::vector<std::uint64_t> costs(plan.segments.size(), 0);
    for (std::size_t s = 0; s < plan.segments.size(); ++s)
        for (std::uint64_t t = plan.segments[s].snapshot; t <= plan.segments[s].lastTransaction; ++t) {
            const std::uint64_t ns = t < wallTimeNs.size() ? wallTimeNs[t] : 0;
            costs[s] += ns > 0 ? ns : fallback;
        }
    std::vector<std::size_t> order(plan.segments.size());
    std::iota(order.begin(), order.end(), std::size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return costs[a] > costs[b]; });

    ShardPlan result;
    result.shards.resize(count);
    for (unsigned i = 0; i < count; ++i)
        result.shards[i].index = i;
    // The cheapest shard so far, ties to the lower index: (cost, index) in a min-heap.
    using Load = std::pair<std::uint64_t, unsigned>;
    std::priority_queue<Load, std::vector<Load>, std::greater<Load>> loads;
    for (unsigned i = 0; i < count; ++i)
        loads.push({0, i});
    for (std::size_t segment : order) {
        const auto [cost, index] = loads.top();
        loads.pop();
        ReplayShard& shard = result.shards[index];
        shard.segments.push_back(segment);
        shard.transactions += plan.segments[segment].length();
        shard.costNs = cost + costs[segment];
        loads.push({shard.costNs, index});
    }
    for (ReplayShard& shard : result.shards)
        std::sort(shard.segments.begin(), shard.segments.end());
    return result;
}

}  // namespace zkdv
