#include <unistd.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "command_runner.h"
#include "commands.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/store/case_store.h"
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
    parser.addOption("select", "SPEC", "which transactions (as zkdv-audit replay --select)");
    parser.addOption("seed", "S", "the selection's seed, shared by every shard (required)");
    parser.addOption("shards", "N", "how many shards (1 to 100000)");
    parser.addOption("tape", "ID", "the tape when the case holds several");
    parser.addFlag("json", "print the plan as JSON on stdout");
    return runCommand("plan", parser, argc, argv, [&]() {
        if (!parser.has("select") || !parser.has("seed") || !parser.has("shards"))
            throw UsageError("--select SPEC, --seed S and --shards N are required");
        ReplayRequest request;
        try {
            request.selection = SelectionSpec::parse(parser.value("select"));
        } catch (const Error& error) {
            throw UsageError(error.what());
        }
        request.seed = parser.unsignedValue("seed", 0);
        request.tapeId = static_cast<std::int64_t>(parser.unsignedValue("tape", 0));
        const std::uint64_t count = parser.unsignedValue("shards", 0);
        if (count < 1 || count > kMaxShards)
            throw UsageError("--shards must be 1 to " + std::to_string(kMaxShards));
        const std::string& casePath = parser.positionals().front();
        if (access(casePath.c_str(), F_OK) != 0)
            throw UsageError("case " + casePath + " does not exist");
        CaseStore store(casePath, CaseStore::Access::ReadOnly);
        ShardedReplay sharded;
        try {
            sharded = planShardedReplay(store, request, static_cast<unsigned>(count));
        } catch (const ReplayError& error) {
            throw UsageError(error.what());
        }
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
                                        {"selection", request.selection.toString()},
                                        {"seed", *request.seed},
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
