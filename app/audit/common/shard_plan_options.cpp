#include "shard_plan_options.h"

#include <unistd.h>

#include "command_runner.h"
#include "zkdv/store/case_store.h"

namespace zkdv::cli {

void addShardPlanOptions(ArgumentParser& parser)
{
    parser.addOption("select", "SPEC", "which transactions (as zkdv-audit replay --select)");
    parser.addOption("seed", "S", "the selection's seed, shared by every shard (required)");
    parser.addOption("shards", "N", "how many shards (1 to " + std::to_string(kMaxShards) + ")");
    parser.addOption("tape", "ID", "the tape when the case holds several");
}

PlannedShards planShardsFromOptions(const ArgumentParser& parser)
{
    if (!parser.has("select") || !parser.has("seed") || !parser.has("shards"))
        throw UsageError("--select SPEC, --seed S and --shards N are required");
    PlannedShards planned;
    try {
        planned.request.selection = SelectionSpec::parse(parser.value("select"));
    } catch (const Error& error) {
        throw UsageError(error.what());
    }
    planned.request.seed = parser.unsignedValue("seed", 0);
    planned.request.tapeId = static_cast<std::int64_t>(parser.unsignedValue("tape", 0));
    const std::uint64_t count = parser.unsignedValue("shards", 0);
    if (count < 1 || count > kMaxShards)
        throw UsageError("--shards must be 1 to " + std::to_string(kMaxShards));
    planned.count = static_cast<unsigned>(count);
    planned.casePath = parser.positionals().front();
    if (access(planned.casePath.c_str(), F_OK) != 0)
        throw UsageError("case " + planned.casePath + " does not exist");
    CaseStore store(planned.casePath, CaseStore::Access::ReadOnly);
    try {
        planned.sharded = planShardedReplay(store, planned.request, planned.count);
    } catch (const ReplayError& error) {
        throw UsageError(error.what());
    }
    return planned;
}

}  // namespace zkdv::cli
