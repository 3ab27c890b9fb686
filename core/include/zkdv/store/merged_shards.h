#pragma once
// The shards a merged run was merged from (case schema 16, table merged_shards): each shard
// case's file, the run in it, and where and by whom that run was replayed and sealed, as
// `zkdv-audit merge` found them, and the merged run's own row and results. The merged run's
// seal covers these rows. Audit-side: no torch.

#include <cstdint>
#include <string>
#include <vector>

#include "zkdv/store/replay_store.h"

namespace zkdv {

class Database;

struct MergedShard {
    unsigned index = 0;
    std::string file;            // the shard case as the merge was given it
    std::int64_t shardRunId = 0; // the run in that file
    std::string host;            // where the shard replayed (the run's owner host)
    std::string device;
    std::string libtorchVersion;
    std::string signer;          // the fingerprint of the key that sealed the shard's run, with its trusted name
    std::string sealedAt;
    std::string startedAt;
    std::string finishedAt;
    std::uint64_t replayed = 0;  // verdicts the shard stored (selected and segment prefixes)
};

// The shards of run `runId`, by index; empty for a run that was not merged.
std::vector<MergedShard> mergedShards(Database& db, std::int64_t runId);

// Stores `shards` as those of run `runId`; inside the caller's write transaction.
void storeMergedShards(Database& db, std::int64_t runId, const std::vector<MergedShard>& shards);

// A merged run's row, stored finished: what its shards replayed, together.
struct MergedRunRow {
    ReplayRunInfo info;  // info.shard unused: a merged run has the count and no index
    unsigned shardCount = 0;
    std::int64_t plannedAuditId = 0;  // the planned audit the merge held the shards to
    std::string startedAt, finishedAt;
    std::string problem;  // "" for none
};

// Inserts the merged run's row inside the caller's write transaction; returns its id.
std::int64_t insertMergedRun(Database& db, const MergedRunRow& row);

// Copies run `fromRun`'s verdicts and metrics from `from` into run `toRun` of `to`, every value
// as SQLite holds it; inside the caller's write transaction of `to`.
void copyRunResults(Database& from, std::int64_t fromRun, Database& to, std::int64_t toRun);

// Every read of a shard case under one snapshot while it lives (a transaction that writes
// nothing), so that a shard's seal is checked over the very rows the merge copies.
class ShardReadSnapshot {
public:
    explicit ShardReadSnapshot(Database& db);
    ~ShardReadSnapshot();
    ShardReadSnapshot(const ShardReadSnapshot&) = delete;
    ShardReadSnapshot& operator=(const ShardReadSnapshot&) = delete;

private:
    Database& db_;
};

// Where run `runId` was replayed: the host part of its owner ("" when none is recorded).
std::string runOwnerHost(Database& db, std::int64_t runId);

}  // namespace zkdv
