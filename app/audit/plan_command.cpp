#include <cstdio>

#include <nlohmann/json.hpp>

#include "command_runner.h"
#include "commands.h"
#include "shard_plan_options.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/util/json_text.h"

namespace zkdv::cli {

int runPlan(int argc, char** argv)
{
    ArgumentParser parser("zkdv-audit plan CASE --select SPEC --seed S --shards N [--tape ID] [--json]",
                          "Prints how a replay of the selection splits into N shards for N machines (docs/replay.md,\n"
                          "\"Sharded replays\"): whole snapshot segments only, balanced by the recorded wall time\n"
                          "of the transactions each segment replays. The same case, SPEC, seed and N give the same\n"
                          "plan on every machine. Replays nothing; reads the case only.");
    parser.setPositionals("CASE", "the audit case (*.zkaudit)", 1, false);
    addShardPlanOptions(parser);
    parser.addFlag("json", "print the plan as JSON on stdout");
    return runCommand("plan", parser, argc, argv, [&]() {
        const PlannedShards planned = planShardsFromOptions(parser);
        const ShardedReplay& sharded = planned.sharded;
        const std::uint64_t count = planned.count;
        if (parser.has("json")) {
            nlohmann::json shards = nlohmann::json::array();
            for (const ReplayShard& shard : sharded.shards.shards) {
                nlohmann::json segments = nlohmann::json::array();
                std::uint64_t selected = 0;
                for (std::size_t s : shard.segments) {
                    const ReplaySegment& segment = sharded.plan.segments[s];
                    segments.push_back({{"snapshot", segment.snapshot}, {"last_transaction", segment.lastTransaction}});
                    selected += segment.selected.size();
                }
                shards.push_back({{"shard", shard.index},
                                  {"segments", segments},
                                  {"selected", selected},
                                  {"replayed", shard.transactions},
                                  {"estimated_ns", shard.costNs}});
            }
            const nlohmann::json out = {{"tape", sharded.tapeId},
                                        {"selection", planned.request.selection.toString()},
                                        {"seed", *planned.request.seed},
                                        {"selected", sharded.selected.size()},
                                        {"segments", sharded.plan.segments.size()},
                                        {"shards", shards}};
            std::printf("%s\n", toJsonText(out, 2).c_str());
        } else {
            std::printf("%zu selected transactions in %zu segments, %llu shards:\n", sharded.selected.size(), sharded.plan.segments.size(),
                        static_cast<unsigned long long>(count));
            for (const ReplayShard& shard : sharded.shards.shards)
                std::printf("  shard %u: %zu segments, %llu transactions replayed, about %.3f s\n", shard.index, shard.segments.size(),
                            static_cast<unsigned long long>(shard.transactions), static_cast<double>(shard.costNs) / 1e9);
        }
        return kExitOk;
    });
}

}  // namespace zkdv::cli
