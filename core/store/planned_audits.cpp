#include "zkdv/store/planned_audits.h"

#include <cstring>

#include <nlohmann/json.hpp>

#include "zkdv/store/database.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/utc_time.h"

namespace zkdv {

namespace {

constexpr const char* kColumns =
    "SELECT p.id, p.tape_id, t.chain_head, t.size, p.selection_spec, p.seed, p.seed_source, p.shard_count, p.tolerance,"
    " coalesce(p.calibration_sha256, ''), p.program_check, p.planned_at FROM planned_audits p JOIN tapes t ON t.id = p.tape_id";

constexpr std::string_view kSealTag = "zkdv planned audit seal 1\n";

// What a planned audit's signature covers: the tag, then its fields as JSON (keys sorted).
std::string signedText(const PlannedAudit& audit)
{
    const nlohmann::json fields = {{"id", audit.id},
                                   {"chain_head", audit.chainHead},
                                   {"tape_size", audit.tapeSize},
                                   {"selection", audit.selection},
                                   {"seed", audit.seed},
                                   {"seed_source", std::string(seedSourceName(audit.seedSource))},
                                   {"shard_count", audit.shardCount},
                                   {"tolerance", audit.tolerance},
                                   {"calibration_sha256", audit.calibrationSha256},
                                   {"program_check", audit.programCheck ? std::string(programCheckName(*audit.programCheck)) : std::string()},
                                   {"planned_at", audit.plannedAt}};
    return std::string(kSealTag) + toJsonText(fields);
}

std::optional<PlannedAudit> readOne(Statement& rows)
{
    if (!rows.step())
        return std::nullopt;
    PlannedAudit audit;
    audit.id = rows.int64(0);
    audit.tapeId = rows.int64(1);
    audit.chainHead = rows.text(2);
    audit.tapeSize = static_cast<std::uint64_t>(rows.int64(3));
    audit.selection = rows.text(4);
    audit.seed = static_cast<std::uint64_t>(rows.int64(5));
    audit.seedSource = seedSourceFromName(rows.text(6));
    audit.shardCount = static_cast<unsigned>(rows.int64(7));
    audit.tolerance = rows.text(8);
    audit.calibrationSha256 = rows.text(9);
    audit.programCheck = programCheckFromName(rows.text(10));
    audit.plannedAt = rows.text(11);
    return audit;
}

}  // namespace

void storePlannedAudit(Database& db, PlannedAudit& audit, const AuditorKey* key)
{
    if (!audit.programCheck)
        throw Error("a planned audit needs the program check the case found");
    audit.plannedAt = utcNow();
    // As stored and read back, so that the signature holds over what a reader finds.
    if (audit.seedSource != SeedSource::Drawn)
        audit.seedSource = SeedSource::Given;
    Statement insert = db.prepare(
        "INSERT INTO planned_audits(tape_id, selection_spec, seed, seed_source, shard_count, tolerance, calibration_sha256,"
        " program_check, planned_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    insert.bind(1, audit.tapeId)
        .bind(2, audit.selection)
        .bind(3, static_cast<std::int64_t>(audit.seed))
        .bind(4, std::string(seedSourceName(audit.seedSource)))
        .bind(5, static_cast<std::int64_t>(audit.shardCount))
        .bind(6, audit.tolerance);
    if (audit.calibrationSha256.empty())
        insert.bindNull(7);
    else
        insert.bind(7, audit.calibrationSha256);
    insert.bind(8, std::string(programCheckName(*audit.programCheck))).bind(9, audit.plannedAt);
    insert.run();
    audit.id = db.lastInsertRowId();
    if (!key)
        return;
    const std::string text = signedText(audit);
    const Signature signature = key->sign(ByteSpan(std::string_view(text)));
    Statement sign = db.prepare("UPDATE planned_audits SET public_key = ?2, signature = ?3 WHERE id = ?1");
    sign.bind(1, audit.id)
        .bindBlob(2, ByteSpan(key->publicKey().data(), key->publicKey().size()))
        .bindBlob(3, ByteSpan(signature.data(), signature.size()))
        .run();
}

std::string plannedAuditSealProblem(Database& db, const PlannedAudit& audit, const std::optional<PublicKey>& ownKey,
                                    const std::vector<TrustedKey>& trusted)
{
    Statement row = db.prepare("SELECT public_key, signature FROM planned_audits WHERE id = ?1");
    row.bind(1, audit.id);
    if (!row.step() || row.isNull(0) || row.isNull(1))
        return "unsigned: nothing shows that its planner's zkdv recorded it";
    PublicKey key{};
    Signature signature{};
    const ByteSpan storedKey = row.blob(0), storedSignature = row.blob(1);
    if (storedKey.size != key.size() || storedSignature.size != signature.size())
        return "altered: its seal is malformed";
    std::memcpy(key.data(), storedKey.data, key.size());
    std::memcpy(signature.data(), storedSignature.data, signature.size());
    const std::string text = signedText(audit);
    if (!verifySignature(key, ByteSpan(std::string_view(text)), signature))
        return "altered: its fields changed after key " + keyFingerprint(key) + " signed them";
    if (trustedSignerNote(key, ownKey, trusted))
        return "";
    return "signed by key " + keyFingerprint(key) + ", which is neither this user's nor in their trusted-keys file";
}

std::optional<PlannedAudit> plannedAudit(Database& db, std::int64_t id)
{
    Statement rows = db.prepare(std::string(kColumns) + " WHERE p.id = ?1");
    rows.bind(1, id);
    return readOne(rows);
}

std::optional<PlannedAudit> newestPlannedAudit(Database& db, std::int64_t tapeId)
{
    Statement rows = db.prepare(std::string(kColumns) + " WHERE ?1 = 0 OR p.tape_id = ?1 ORDER BY p.id DESC LIMIT 1");
    rows.bind(1, tapeId);
    return readOne(rows);
}

std::optional<PlannedAudit> runPlannedAudit(Database& db, std::int64_t runId)
{
    Statement rows = db.prepare(std::string(kColumns) + " JOIN replay_runs r ON r.planned_audit_id = p.id WHERE r.id = ?1");
    rows.bind(1, runId);
    return readOne(rows);
}

}  // namespace zkdv
