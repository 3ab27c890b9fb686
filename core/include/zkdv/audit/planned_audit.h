#pragma once
// The audit an auditor asked for when they planned a sharded replay (docs/replay.md, "Sharded
// replays"): everything a shard run's result depends on, fixed in the auditor's case when the
// job is planned, so that `zkdv-audit merge` holds every shard to it and never to what the
// shards say of themselves. Audit-side: no torch.

#include <cstdint>
#include <optional>
#include <string>

#include "zkdv/audit/audit_seed.h"
#include "zkdv/audit/program_check.h"

namespace zkdv {

struct PlannedAudit {
    std::int64_t id = 0;     // in the case; 0 before it is stored
    std::int64_t tapeId = 0; // in the case that planned it
    std::string chainHead;   // the tape's identity: chain head and size
    std::uint64_t tapeSize = 0;
    std::string selection;   // canonical SelectionSpec text
    std::uint64_t seed = 0;
    SeedSource seedSource = SeedSource::Given;
    unsigned shardCount = 1;
    std::string tolerance;          // canonical Tolerance text (Tolerance::toString)
    std::string calibrationSha256;  // the calibration file's SHA-256 (hex); "" for none
    // What the case's program check found when the audit was planned; nullopt only in what a
    // shard run says of itself when its row holds none.
    std::optional<ProgramCheck> programCheck;
    std::string plannedAt;  // UTC, ISO 8601; "" before it is stored
};

// How `shard` (what a shard's run says it replayed) differs from the `planned` audit, in the
// first field that differs, in the order tape, selection, seed, shard count, tolerance,
// calibration, program check: "seed 17, the planned audit's is 42"; "" when it is a shard of
// that audit. The id, seed source and dates are not compared. With a calibration planned the
// tolerance's envelope is not compared: each node derives it from the calibration for its own
// pair of environments, and the calibration's digest is compared instead.
std::string plannedAuditDifference(const PlannedAudit& planned, const PlannedAudit& shard);

}  // namespace zkdv
