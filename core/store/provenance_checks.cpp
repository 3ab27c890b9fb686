#include "zkdv/store/provenance_checks.h"

#include "zkdv/store/database.h"
#include "zkdv/util/error.h"
#include "zkdv/util/utc_time.h"
#include "zkdv/util/utf8.h"

namespace zkdv {

namespace {

constexpr const char* kColumns = "SELECT id, kind, path, sha256, result, detail, checked_at FROM provenance_checks WHERE tape_id = ?1";

ProvenanceCheck checkFrom(const Statement& row)
{
    ProvenanceCheck check;
    check.id = row.int64(0);
    // The schema's CHECK admits only the three names; a case is untrusted all the same.
    check.kind = provenanceKindFromName(row.text(1)).value_or(ProvenanceKind::Dataset);
    check.path = toValidUtf8(row.text(2));
    check.sha256 = row.isNull(3) ? std::string() : toValidUtf8(row.text(3));
    check.ok = row.text(4) == "ok";
    check.detail = toValidUtf8(row.text(5));
    check.checkedAt = toValidUtf8(row.text(6));
    return check;
}

}  // namespace

const char* provenanceKindName(ProvenanceKind kind)
{
    switch (kind) {
    case ProvenanceKind::StartCheckpoint: return "start-checkpoint";
    case ProvenanceKind::FinalModel: return "final-model";
    case ProvenanceKind::Dataset: break;
    }
    return "dataset";
}

std::optional<ProvenanceKind> provenanceKindFromName(std::string_view name)
{
    for (ProvenanceKind kind : provenanceKinds())
        if (name == provenanceKindName(kind))
            return kind;
    return std::nullopt;
}

const std::vector<ProvenanceKind>& provenanceKinds()
{
    static const std::vector<ProvenanceKind> kinds{ProvenanceKind::Dataset, ProvenanceKind::StartCheckpoint, ProvenanceKind::FinalModel};
    return kinds;
}

ProvenanceCheck ProvenanceChecks::add(ProvenanceCheck check)
{
    Statement exists = db_.prepare("SELECT 1 FROM tapes WHERE id = ?1");
    exists.bind(1, tapeId_);
    if (!exists.step())
        throw Error("case " + db_.path() + " has no tape " + std::to_string(tapeId_) + " to record a " + provenanceKindName(check.kind) + " check for");
    // A character cut in two at the limit reads as U+FFFD (toValidUtf8 below).
    if (check.detail.size() > kMaxDetailBytes)
        check.detail.resize(kMaxDetailBytes);
    if (check.checkedAt.empty())
        check.checkedAt = utcNow();
    Statement store = db_.prepare(
        "INSERT INTO provenance_checks(tape_id, kind, path, sha256, result, detail, checked_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    store.bind(1, tapeId_)
        .bind(2, provenanceKindName(check.kind))
        .bind(3, toValidUtf8(check.path))
        .bind(4, check.sha256.empty() ? std::optional<std::string>() : std::optional<std::string>(check.sha256))
        .bind(5, check.ok ? "ok" : "differs")
        .bind(6, toValidUtf8(check.detail))
        .bind(7, check.checkedAt)
        .run();
    check.id = db_.lastInsertRowId();
    return check;
}

std::optional<ProvenanceCheck> ProvenanceChecks::latest(ProvenanceKind kind)
{
    Statement row = db_.prepare(std::string(kColumns) + " AND kind = ?2 ORDER BY id DESC LIMIT 1");
    row.bind(1, tapeId_).bind(2, provenanceKindName(kind));
    if (!row.step())
        return std::nullopt;
    return checkFrom(row);
}

std::vector<ProvenanceCheck> ProvenanceChecks::all()
{
    Statement rows = db_.prepare(std::string(kColumns) + " ORDER BY id");
    rows.bind(1, tapeId_);
    std::vector<ProvenanceCheck> checks;
    while (rows.step())
        checks.push_back(checkFrom(rows));
    return checks;
}

}  // namespace zkdv
