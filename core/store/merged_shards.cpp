#include "zkdv/store/merged_shards.h"

#include "zkdv/store/database.h"

namespace zkdv {

std::vector<MergedShard> mergedShards(Database& db, std::int64_t runId)
{
    Statement rows = db.prepare(
        "SELECT shard_index, file, shard_run_id, host, device, libtorch_version, signer, sealed_at, started_at, finished_at, replayed"
        " FROM merged_shards WHERE run_id = ?1 ORDER BY shard_index");
    rows.bind(1, runId);
    std::vector<MergedShard> shards;
    while (rows.step()) {
        MergedShard shard;
        shard.index = static_cast<unsigned>(rows.int64(0));
        shard.file = rows.text(1);
        shard.shardRunId = rows.int64(2);
        shard.host = rows.text(3);
        shard.device = rows.text(4);
        shard.libtorchVersion = rows.text(5);
        shard.signer = rows.text(6);
        shard.sealedAt = rows.text(7);
        shard.startedAt = rows.text(8);
        shard.finishedAt = rows.text(9);
        shard.replayed = static_cast<std::uint64_t>(rows.int64(10));
        shards.push_back(std::move(shard));
    }
    return shards;
}

void storeMergedShards(Database& db, std::int64_t runId, const std::vector<MergedShard>& shards)
{
    Statement insert = db.prepare(
        "INSERT INTO merged_shards(run_id, shard_index, file, shard_run_id, host, device, libtorch_version, signer, sealed_at,"
        " started_at, finished_at, replayed) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
    for (const MergedShard& shard : shards) {
        insert.bind(1, runId)
            .bind(2, static_cast<std::int64_t>(shard.index))
            .bind(3, shard.file)
            .bind(4, shard.shardRunId)
            .bind(5, shard.host)
            .bind(6, shard.device)
            .bind(7, shard.libtorchVersion)
            .bind(8, shard.signer)
            .bind(9, shard.sealedAt)
            .bind(10, shard.startedAt)
            .bind(11, shard.finishedAt)
            .bind(12, static_cast<std::int64_t>(shard.replayed));
        insert.run();
    }
}

}  // namespace zkdv
