#include "zkdv/store/shard_case.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>

#include <filesystem>
#include <system_error>

#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/util/error.h"

namespace zkdv {

namespace {

// SQLite's online backup: a consistent copy of every page, without reading the rows one by one.
void copyDatabase(Database& source, const std::string& path)
{
    sqlite3* target = nullptr;
    if (sqlite3_open_v2(path.c_str(), &target, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_EXRESCODE, nullptr) != SQLITE_OK) {
        const std::string why = target ? sqlite3_errmsg(target) : "out of memory";
        sqlite3_close(target);
        throw Error("cannot create the shard case " + path + ": " + why);
    }
    sqlite3_backup* backup = sqlite3_backup_init(target, "main", source.handle(), "main");
    int rc = backup ? sqlite3_backup_step(backup, -1) : sqlite3_errcode(target);
    if (backup)
        sqlite3_backup_finish(backup);
    const std::string why = sqlite3_errmsg(target);
    sqlite3_close(target);
    if (rc != SQLITE_DONE)
        throw Error("cannot copy case " + source.path() + " into the shard case " + path + ": " + why);
}

}  // namespace

void writeShardCase(CaseStore& source, std::int64_t tapeId, const std::string& path)
{
    struct stat existing {};
    if (::lstat(path.c_str(), &existing) == 0 || errno != ENOENT)
        throw Error("the shard case " + path + " exists already; a shard's results are never written over: remove it, or give another --into");
    try {
        copyDatabase(source.database(), path);
        CaseStore shard(path, CaseStore::Access::ReadWrite);
        Database& db = shard.database();
        {
            SqlTransaction transaction(db);
            // Runs first: their verdicts, metrics and seals go with them (ON DELETE CASCADE).
            // A shard case carries no planned audit: the merge reads the one in the auditor's case.
            db.exec("DELETE FROM replay_runs; DELETE FROM planned_audits; DELETE FROM transaction_notes; DELETE FROM provenance_checks;");
            Statement tapes = db.prepare("DELETE FROM tapes WHERE id <> ?1");
            tapes.bind(1, tapeId).run();
            Statement programs = db.prepare("DELETE FROM programs WHERE sha256 NOT IN (SELECT program_sha256 FROM tapes WHERE program_sha256 IS NOT NULL)");
            programs.run();
            if (db.queryInt64("SELECT count(*) FROM tapes").value_or(0) != 1)
                throw Error("case " + source.path() + " holds no tape " + std::to_string(tapeId));
            transaction.commit();
        }
        db.exec("VACUUM");
    } catch (...) {
        std::error_code error;
        std::filesystem::remove(path, error);
        for (const char* suffix : {"-journal", "-wal", "-shm"})
            std::filesystem::remove(path + suffix, error);
        throw;
    }
}

void trimShardCase(const std::string& path)
{
    CaseStore shard(path, CaseStore::Access::ReadWrite);
    Database& db = shard.database();
    {
        SqlTransaction transaction(db);
        // The tape's rows are no longer what its ingest sealed: a trimmed shard case vouches for none.
        db.exec("DELETE FROM payloads; DELETE FROM programs; DELETE FROM snapshots; DELETE FROM transaction_orders; DELETE FROM tape_seals;"
                " UPDATE transactions SET fingerprints = NULL, state_digest = NULL, max_update = NULL;");
        transaction.commit();
    }
    db.exec("VACUUM");
}

}  // namespace zkdv
