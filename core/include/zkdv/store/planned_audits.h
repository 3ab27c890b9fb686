#pragma once
// The audits an auditor planned as sharded replays (case schema 17, table planned_audits;
// zkdv/audit/planned_audit.h): what `zkdv-audit slurm-script`, `kubernetes-job` and the
// workstation's cluster job record when they plan a job, and what a merge holds the shards
// to. A merged run names the planned audit it was checked against, and its seal covers that
// row. Audit-side: no torch.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/audit/planned_audit.h"
#include "zkdv/util/auditor_key.h"

namespace zkdv {

class Database;

// Stores `audit` (its tape by tapeId), signed with `key` when given, and sets its id and
// plannedAt; inside the caller's write transaction. The signature covers the id, the tape's
// chain head and size and every field of the audit, so that whoever can write the case (a
// cluster node on the shared file system) cannot move an audit to match their shards. Throws
// Error for an audit without a program check.
void storePlannedAudit(Database& db, PlannedAudit& audit, const AuditorKey* key);

// Why planned audit `audit` (as read from `db`) cannot be vouched for: "" when a signature by
// `ownKey` or a `trusted` key holds over it, else "unsigned", "altered" or "signed by a key
// neither this user's nor trusted" with what that means.
std::string plannedAuditSealProblem(Database& db, const PlannedAudit& audit, const std::optional<PublicKey>& ownKey,
                                    const std::vector<TrustedKey>& trusted);

// Planned audit `id`, or the newest planned audit of tape `tapeId` (0: of any tape); nullopt
// when the case holds none.
std::optional<PlannedAudit> plannedAudit(Database& db, std::int64_t id);
std::optional<PlannedAudit> newestPlannedAudit(Database& db, std::int64_t tapeId = 0);

// The planned audit run `runId` was merged against; nullopt for a run that was not merged
// (or merged before case schema 17).
std::optional<PlannedAudit> runPlannedAudit(Database& db, std::int64_t runId);

}  // namespace zkdv
