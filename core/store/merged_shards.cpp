#include "zkdv/store/merged_shards.h"

#include "run_row.h"

#include <sqlite3.h>

#include <exception>

#include "zkdv/store/database.h"
#include "zkdv/version.h"

namespace zkdv {

namespace {

constexpr const char* kVerdictColumns =
    "idx, verdict, detail, segment, selected, worst_tensor, worst_slot, worst_max_ulp, worst_rel_l2, replay_ns, cause";
constexpr const char* kMetricColumns =
    "idx, tensor, slot, max_abs, rel_l2, cosine, max_ulp, mean_ulp, nan_mismatches, inf_mismatches, ulp_histogram, verdict, elements,"
    " bitwise_equal, note";

void copyRows(Database& from, std::int64_t fromRun, Database& to, std::int64_t toRun, const std::string& table, const std::string& columns)
{
    Statement read = from.prepare("SELECT " + columns + " FROM " + table + " WHERE run_id = ?1");
    read.bind(1, fromRun);
    const int count = read.columnCount();
    std::string placeholders = "?1";
    for (int c = 0; c < count; ++c)
        placeholders += ", ?" + std::to_string(c + 2);
    Statement write = to.prepare("INSERT INTO " + table + "(run_id, " + columns + ") VALUES(" + placeholders + ")");
    while (read.step()) {
        write.bind(1, toRun);
        for (int c = 0; c < count; ++c)
            sqlite3_bind_value(write.handle(), c + 2, sqlite3_column_value(read.handle(), c));
        write.run();
    }
}

}  // namespace

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

std::int64_t insertMergedRun(Database& db, const MergedRunRow& row)
{
    RunRowFacts facts;
    facts.status = std::string(storedRunStatusName(RunStatus::Finished));
    facts.startedAt = row.startedAt;
    facts.finishedAt = row.finishedAt;
    if (!row.problem.empty())
        facts.problem = row.problem;
    facts.shardCount = static_cast<std::int64_t>(row.shardCount);
    if (row.plannedAuditId != 0)
        facts.plannedAuditId = row.plannedAuditId;
    return insertRunRow(db, row.info, facts);
}

void copyRunResults(Database& from, std::int64_t fromRun, Database& to, std::int64_t toRun)
{
    copyRows(from, fromRun, to, toRun, "verdicts", kVerdictColumns);
    copyRows(from, fromRun, to, toRun, "metrics", kMetricColumns);
}

ShardReadSnapshot::ShardReadSnapshot(Database& db) : db_(db)
{
    db_.exec("BEGIN");
}

ShardReadSnapshot::~ShardReadSnapshot()
{
    try {
        db_.exec("ROLLBACK");  // nothing was written: it only ends the snapshot
    } catch (const std::exception&) {
        // The connection closes next, which ends it as well.
    }
}

std::string runOwnerHost(Database& db, std::int64_t runId)
{
    Statement owner = db.prepare("SELECT coalesce(owner_host, '') FROM replay_runs WHERE id = ?1");
    owner.bind(1, runId);
    if (!owner.step())
        return "";
    // RunOwner::host is "box/pid:[4026531836]": the host is what comes before the slash.
    const std::string host = owner.text(0);
    return host.substr(0, host.find('/'));
}

}  // namespace zkdv
