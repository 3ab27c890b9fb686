#pragma once
// Joins the shard cases of a sharded replay into the auditor's case as one run (docs/replay.md,
// "Sharded replays"). Each shard ran `zkdv-audit replay --shard I/N --into SHARD.zkaudit` on
// some machine; the merge accepts them only all together and only when each is what it claims:
// sealed by a key the auditor trusts and unchanged since, a shard of the auditor's tape, of
// the same selection, seed, count and tolerance, and holding exactly the transactions the
// plan gives its index. One bad shard refuses the merge, naming its file and why, and the
// auditor's case is left as it was. Audit-side: no torch.

#include <cstdint>
#include <string>
#include <vector>

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

struct ShardMergeResult {
    StoredReplayRun run;               // the merged run as stored, with its counts
    std::vector<MergedShard> shards;   // by index
    std::string sealProblem;           // why the merged run was stored unsigned ("" when sealed)

    bool passed() const;
    bool failed() const;
};

// Merges `shardFiles` into `store` (opened read-write) as one new run of the tape they
// replayed, sealed with this user's key. Throws ShardMergeRefused (the case unchanged) for
// a bad shard or set of shards; `progress` counts shards checked and copied and may cancel
// (OperationCancelled, nothing merged).
ShardMergeResult mergeShards(CaseStore& store, const std::vector<std::string>& shardFiles, ProgressSink* progress = nullptr);

}  // namespace zkdv
