#pragma once
// The options that define a sharded replay's plan, read the same way by every command that
// plans one (`plan`, `slurm-script`, `kubernetes-job`): the case, --select, --seed, --shards
// and --tape, checked by planning the replay now.

#include <string>

#include "argument_parser.h"
#include "zkdv/replay/replay_runner.h"

namespace zkdv::cli {

struct PlannedShards {
    std::string casePath;
    ReplayRequest request;  // selection, seed and tape
    unsigned count = 0;     // shards
    ShardedReplay sharded;
};

// Adds --select, --seed, --shards and --tape (CASE is the caller's positional).
void addShardPlanOptions(ArgumentParser& parser);

// Plans the replay the options name; throws UsageError for a missing or bad option, a case
// that does not exist, or a selection the case cannot plan.
PlannedShards planShardsFromOptions(const ArgumentParser& parser);

}  // namespace zkdv::cli
