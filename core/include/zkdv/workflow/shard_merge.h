#pragma once
// Joins the shard cases of a sharded replay into the auditor's case as one run (docs/replay.md,
// "Sharded replays"). Each shard ran `zkdv-audit replay --shard I/N --into SHARD.zkaudit` on
// some machine; the merge accepts them only all together and only when each is a shard of the
// audit the auditor asked for: the planned audit recorded in the case when the job was planned
// (zkdv/store/planned_audits.h), or one the auditor states now, never what the shards say of
// themselves. Each must be sealed by a key the auditor trusts and unchanged since, of that
// audit's tape, selection, seed, count, tolerance, calibration and program check, and hold
// exactly the transactions the plan gives its index. One bad shard refuses the merge, naming
// its file and why, and the auditor's case is left as it was. Audit-side: no torch.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/audit/planned_audit.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/store/merged_shards.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/util/error.h"

namespace zkdv {

class CaseStore;
class ProgressSink;

// A shard that cannot be merged, or a set of shards that does not make up the plan; nothing
// was merged. The message names the file(s) and the reason.
class ShardMergeRefused : public Error {
public:
    using Error::Error;
};

// The audit the shards must be of.
struct ShardMergeAudit {
    // A planned audit of the case by id; 0: the case's newest (of tape `tapeId` when not 0).
    std::int64_t plannedId = 0;
    std::int64_t tapeId = 0;
    // Instead, the audit the auditor states now (the request's tape, selection, seed, tolerance
    // and calibration, in `statedShards` shards): stored in the case as a planned audit with
    // the merged run.
    std::optional<ReplayRequest> stated;
    unsigned statedShards = 0;
};

struct ShardMergeResult {
    StoredReplayRun run;               // the merged run as stored, with its counts
    PlannedAudit audit;                // the audit every shard was held to, as stored
    std::vector<MergedShard> shards;   // by index
    std::string sealProblem;           // why the merged run was stored unsigned ("" when sealed)

    bool passed() const;     // confirmed the tape (exit 0): bit for bit or within rounding
    bool bitForBit() const;  // and every transaction exact: the only merged run that says "passed"
    bool failed() const;
};

// Merges `shardFiles` into `store` (opened read-write) as one new run of `audit`'s tape,
// naming that audit and sealed with this user's key. Throws ShardMergeRefused (the case
// unchanged) when the case holds no such planned audit and none is stated, and for a bad
// shard or set of shards; `progress` counts shards checked and copied and may cancel
// (OperationCancelled, nothing merged).
ShardMergeResult mergeShards(CaseStore& store, const std::vector<std::string>& shardFiles, const ShardMergeAudit& audit = {},
                             ProgressSink* progress = nullptr);

}  // namespace zkdv
