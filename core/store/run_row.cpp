#include "run_row.h"

#include "zkdv/store/database.h"
#include "zkdv/version.h"

namespace zkdv {

std::int64_t insertRunRow(Database& db, const ReplayRunInfo& info, const RunRowFacts& facts)
{
    Statement insert = db.prepare(
        "INSERT INTO replay_runs(tape_id, device, libtorch_version, zkdv_version, selection_spec, seed, tolerance, threads,"
        " started_at, finished_at, status, intra_op_threads, selected_count, environment, problem, owner_host, owner_boot_id,"
        " owner_pid, owner_start_time, seed_source, program_check, shard_index, shard_count, planned_audit_id)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)");
    insert.bind(1, info.tapeId)
        .bind(2, info.device)
        .bind(3, info.libtorchVersion)
        .bind(4, std::string(kVersion))
        .bind(5, info.selection)
        .bind(6, static_cast<std::int64_t>(info.seed))
        .bind(7, info.tolerance)
        .bind(8, static_cast<std::int64_t>(info.threads))
        .bind(9, facts.startedAt)
        .bind(10, facts.finishedAt)
        .bind(11, facts.status)
        .bind(12, info.intraOpThreads)
        .bind(13, static_cast<std::int64_t>(info.selectedCount))
        .bind(14, info.environmentJson)
        .bind(15, facts.problem);
    if (facts.owner)
        insert.bind(16, facts.owner->host).bind(17, facts.owner->bootId).bind(18, facts.owner->pid).bind(19, facts.owner->startTime);
    else
        insert.bindNull(16).bindNull(17).bindNull(18).bindNull(19);
    // A seed of unknown origin counts as the auditor's: only a drawn one is stored as drawn.
    insert.bind(20, std::string(seedSourceName(info.seedSource == SeedSource::Drawn ? SeedSource::Drawn : SeedSource::Given)))
        .bind(21, std::string(programCheckName(info.programCheck)))
        .bind(22, facts.shardIndex)
        .bind(23, facts.shardCount)
        .bind(24, facts.plannedAuditId);
    insert.run();
    return db.lastInsertRowId();
}

}  // namespace zkdv
