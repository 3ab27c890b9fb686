#pragma once
// The shards a merged run was merged from (case schema 16, table merged_shards): each shard
// case's file, the run in it, and where and by whom that run was replayed and sealed, as
// `zkdv-audit merge` found them. The merged run's seal covers these rows. Audit-side: no torch.

#include <cstdint>
#include <string>
#include <vector>

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

}  // namespace zkdv
