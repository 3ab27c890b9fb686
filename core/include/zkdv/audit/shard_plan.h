#pragma once
// A replay split into shards that run on different machines (issue 31; docs/replay.md,
// "Sharded replays"): whole segments only, never one segment across two shards, balanced by
// the recorded wall time of the transactions each segment replays. The plan depends only on
// the replay plan, the costs and the shard count, so every machine that computes it for the
// same selection, seed and count gets the same one.

#include <cstdint>
#include <string>
#include <vector>

#include "zkdv/audit/replay_plan.h"

namespace zkdv {

// The most shards one plan may have (a bound on a request, not on clusters).
inline constexpr unsigned kMaxShards = 100'000;

struct ReplayShard {
    unsigned index = 0;                    // 0 … count − 1
    std::vector<std::size_t> segments;     // indices into ReplayPlan::segments, ascending
    std::uint64_t transactions = 0;        // replayed (segment prefixes included)
    std::uint64_t costNs = 0;              // the estimate it was balanced by
};

struct ShardPlan {
    std::vector<ReplayShard> shards;       // by index; a shard may be empty when segments are few
    // The segments of shard `index` as a replay plan of their own.
    ReplayPlan shardPlan(const ReplayPlan& plan, unsigned index) const;
};

// Which shard of how many one replay is: "I/N" on a command line, I in 0 … N − 1.
struct ShardSpec {
    unsigned index = 0;
    unsigned count = 1;

    // Throws Error naming what is wrong ("3/3": the index must be below the count).
    static ShardSpec parse(const std::string& text);
    std::string toString() const;
    bool operator==(const ShardSpec& other) const { return index == other.index && count == other.count; }
};

// Splits `plan` into `count` shards (1 … kMaxShards; Error otherwise). `wallTimeNs[i]` is
// transaction i's recorded wall time (0 or absent: unrecorded, counted as the median of
// those recorded, or 1 when none is). Longest segments first, each to the shard with the
// least cost so far (ties to the lower index): the costliest shard exceeds the cheapest by at
// most one segment's cost.
ShardPlan planShards(const ReplayPlan& plan, const std::vector<std::uint64_t>& wallTimeNs, unsigned count);

}  // namespace zkdv
