#include <unistd.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "command_runner.h"
#include "commands.h"
#include "terminal_progress.h"
#include "zkdv/store/case_store.h"
#include "zkdv/util/json_text.h"
#include "zkdv/workflow/shard_merge.h"

namespace zkdv::cli {

namespace {

nlohmann::json mergeJson(const ShardMergeResult& result)
{
    nlohmann::json shards = nlohmann::json::array();
    for (const MergedShard& shard : result.shards)
        shards.push_back({{"index", shard.index},
                          {"file", shard.file},
                          {"run", shard.shardRunId},
                          {"host", shard.host},
                          {"device", shard.device},
                          {"libtorch", shard.libtorchVersion},
                          {"signer", shard.signer},
                          {"sealed_at", shard.sealedAt},
                          {"started_at", shard.startedAt},
                          {"finished_at", shard.finishedAt},
                          {"replayed", shard.replayed}});
    const StoredReplayRun& run = result.run;
    return {{"run", run.id},
            {"tape", run.tapeId},
            {"selection", run.selection},
            {"seed", run.seed},
            {"shard_count", run.shardCount},
            {"shards", shards},
            {"selected", run.selectedCount},
            {"replayed", run.replayed},
            {"exact", run.exact},
            {"within_tolerance", run.withinTolerance},
            {"diverged", run.diverged},
            {"unverifiable", run.unverifiable},
            {"trainers_failures", run.trainersFailures},
            {"passed", result.passed()},
            {"sealed", result.sealProblem.empty()},
            {"seal_problem", result.sealProblem}};
}

}  // namespace

int runMerge(int argc, char** argv)
{
    ArgumentParser parser("zkdv-audit merge CASE SHARD.zkaudit... [--json]",
                          "Joins the shard cases of a sharded replay (zkdv-audit replay --shard I/N --into SHARD.zkaudit)\n"
                          "into CASE as one replay run, sealed with this user's key (docs/replay.md, \"Sharded replays\").\n"
                          "Every shard must be given, once, and each must be sealed by this user's key or one in their\n"
                          "trusted-keys file and unchanged since, be a shard of a tape CASE holds, of the same selection,\n"
                          "seed, shard count and tolerance, and hold exactly the transactions the plan gives its index.\n"
                          "One bad shard refuses the merge, naming its file and why; CASE is then unchanged.\n"
                          "Exit 0 when the merged run passed, 1 when a transaction diverged or is unverifiable, 2 when the\n"
                          "merge was refused or a file is unreadable.");
    parser.setPositionals("CASE SHARD...", "the auditor's case, then every shard case", 2, true);
    parser.addFlag("json", "print the merged run as JSON on stdout");
    parser.addFlag("quiet", "no progress on stderr");
    return runCommand("merge", parser, argc, argv, [&]() {
        const std::vector<std::string>& files = parser.positionals();
        const std::string& casePath = files.front();
        if (access(casePath.c_str(), F_OK) != 0)
            throw UsageError("case " + casePath + " does not exist; merge into the case the shards were made from");
        const std::vector<std::string> shardFiles(files.begin() + 1, files.end());
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        TerminalProgress progress(!parser.has("quiet"));
        ShardMergeResult result;
        try {
            result = mergeShards(store, shardFiles, &progress);
        } catch (const ShardMergeRefused& refused) {
            progress.finish();
            throw UsageError(refused.what());
        }
        progress.finish();
        const StoredReplayRun& run = result.run;
        if (parser.has("json")) {
            std::printf("%s\n", toJsonText(mergeJson(result), 2).c_str());
        } else {
            std::printf("run %lld: %zu shards of selection %s (seed %llu) merged: %llu replayed, %llu exact, %llu within tolerance, "
                        "%llu diverged, %llu unverifiable: %s\n",
                        static_cast<long long>(run.id), result.shards.size(), run.selection.c_str(), static_cast<unsigned long long>(run.seed),
                        static_cast<unsigned long long>(run.replayed), static_cast<unsigned long long>(run.exact),
                        static_cast<unsigned long long>(run.withinTolerance), static_cast<unsigned long long>(run.diverged),
                        static_cast<unsigned long long>(run.unverifiable), result.passed() ? "passed" : "FAILED");
            for (const MergedShard& shard : result.shards)
                std::printf("  shard %u: %s, run %lld on %s (%s), %llu replayed, sealed by %s\n", shard.index, shard.file.c_str(),
                            static_cast<long long>(shard.shardRunId), shard.host.c_str(), shard.device.c_str(),
                            static_cast<unsigned long long>(shard.replayed), shard.signer.c_str());
        }
        if (!result.sealProblem.empty())
            std::fprintf(stderr, "zkdv-audit merge: warning: run %lld was stored unsigned, so no report can vouch for its results: %s\n",
                         static_cast<long long>(run.id), result.sealProblem.c_str());
        return result.passed() ? kExitOk : kExitCheckFailed;
    });
}

}  // namespace zkdv::cli
