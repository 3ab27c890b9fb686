#pragma once
// The audit a sharded replay asks for (zkdv/audit/planned_audit.h), worked out from a replay
// request on the auditor's case, and recorded there when a job is planned, so that the merge
// holds every shard to it (docs/replay.md, "Sharded replays"). Audit-side: no torch.

#include "zkdv/audit/planned_audit.h"
#include "zkdv/replay/replay_runner.h"

namespace zkdv {

// The audit a sharded replay of `request` in `shards` shards asks for: its tape's identity,
// the canonical selection, the seed and its source, the count, the canonical tolerance, the
// calibration's digest and what the case's program check finds now (each shard's case
// carries the case's program). Throws ReplayError without a seed, for a count out of range or
// a tape the case does not hold.
PlannedAudit plannedAuditOf(CaseStore& store, const ReplayRequest& request, unsigned shards);

// Plans the sharded replay (ReplayError when it cannot be planned) and stores plannedAuditOf
// in the case (opened read-write); returns it with its id. What slurm-script, kubernetes-job
// and the workstation's cluster job call.
PlannedAudit recordPlannedAudit(CaseStore& store, const ReplayRequest& request, unsigned shards);

}  // namespace zkdv
