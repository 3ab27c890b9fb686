#include <unistd.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "command_runner.h"
#include "commands.h"
#include "replay_options.h"
#include "terminal_progress.h"
#include "zkdv/store/case_store.h"
#include "zkdv/util/json_text.h"
#include "zkdv/workflow/shard_merge.h"

namespace zkdv::cli {

namespace {

nlohmann::json auditJson(const PlannedAudit& audit)
{
    return {{"id", audit.id},
            {"tape", audit.tapeId},
            {"chain_head", audit.chainHead},
            {"selection", audit.selection},
            {"seed", audit.seed},
            {"seed_source", std::string(seedSourceName(audit.seedSource))},
            {"shard_count", audit.shardCount},
            {"tolerance", audit.tolerance},
            {"calibration_sha256", audit.calibrationSha256.empty() ? nlohmann::json() : nlohmann::json(audit.calibrationSha256)},
            {"program_check", audit.programCheck ? nlohmann::json(std::string(programCheckName(*audit.programCheck))) : nlohmann::json()},
            {"planned_at", audit.plannedAt}};
}

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
            {"planned_audit", auditJson(result.audit)},
            {"shards", shards},
            {"selected", run.selectedCount},
            {"replayed", run.replayed},
            {"exact", run.exact},
            {"within_tolerance", run.withinTolerance},
            {"diverged", run.diverged},
            {"unverifiable", run.unverifiable},
            {"trainers_failures", run.trainersFailures},
            {"passed", result.bitForBit()},
            {"consistent_within_rounding", result.passed() && !result.bitForBit()},
            {"sealed", result.sealProblem.empty()},
            {"seal_problem", result.sealProblem}};
}

// The audit the shards are held to: the one stated by --select, --seed and --shards (with
// --tolerance, --calibration and --tape), else planned audit --plan ID, else the case's newest.
ShardMergeAudit auditFromOptions(const ArgumentParser& parser)
{
    ShardMergeAudit audit;
    audit.tapeId = static_cast<std::int64_t>(parser.unsignedValue("tape", 0));
    const bool stated = parser.has("select") || parser.has("seed") || parser.has("shards");
    if (!stated) {
        if (parser.has("tolerance") || parser.has("calibration"))
            throw UsageError("--tolerance and --calibration state the audit with --select SPEC, --seed S and --shards N");
        audit.plannedId = static_cast<std::int64_t>(parser.unsignedValue("plan", 0));
        if (parser.has("plan") && audit.plannedId == 0)
            throw UsageError("--plan needs the id of a planned audit (1 or more)");
        return audit;
    }
    if (parser.has("plan"))
        throw UsageError("--plan names a planned audit; --select, --seed and --shards state one: choose one");
    if (!parser.has("select") || !parser.has("seed") || !parser.has("shards"))
        throw UsageError("stating the audit the shards must be of needs --select SPEC, --seed S and --shards N");
    ReplayRequest request;
    try {
        request.selection = SelectionSpec::parse(parser.value("select"));
    } catch (const Error& error) {
        throw UsageError(error.what());
    }
    request.seed = parser.unsignedValue("seed", 0);
    request.tapeId = audit.tapeId;
    readToleranceOptions(parser, request);
    const std::uint64_t count = parser.unsignedValue("shards", 0);
    if (count < 1 || count > kMaxShards)
        throw UsageError("--shards must be 1 to " + std::to_string(kMaxShards));
    audit.stated = std::move(request);
    audit.statedShards = static_cast<unsigned>(count);
    return audit;
}

}  // namespace

int runMerge(int argc, char** argv)
{
    ArgumentParser parser("zkdv-audit merge CASE SHARD.zkaudit... [--plan ID | --select SPEC --seed S --shards N [--tolerance T]\n"
                          "                        [--calibration FILE]] [--tape ID] [--json]",
                          "Joins the shard cases of a sharded replay (zkdv-audit replay --shard I/N --into SHARD.zkaudit)\n"
                          "into CASE as one replay run, sealed with this user's key (docs/replay.md, \"Sharded replays\").\n"
                          "The shards are held to the audit asked for: the one slurm-script or kubernetes-job recorded in\n"
                          "CASE when it planned the job (the newest, or --plan ID), or the one stated with --select,\n"
                          "--seed and --shards (and --tolerance, --calibration as the shards were to replay), never to\n"
                          "what the shards say of themselves; with neither, the merge is refused.\n"
                          "Every shard must be given, once, and each must be sealed by this user's key or one in their\n"
                          "trusted-keys file and unchanged since, be of that audit's tape, selection, seed, shard count,\n"
                          "tolerance, calibration and program check, and hold exactly the transactions the plan gives its index.\n"
                          "One bad shard refuses the merge, naming its file and why; CASE is then unchanged.\n"
                          "Exit 0 when the merged run passed, 1 when a transaction diverged or is unverifiable, 2 when the\n"
                          "merge was refused or a file is unreadable.");
    parser.setPositionals("CASE SHARD...", "the auditor's case, then every shard case", 2, true);
    parser.addOption("plan", "ID", "hold the shards to this planned audit of CASE (default: its newest)");
    parser.addOption("select", "SPEC", "state the audit instead: its selection (as zkdv-audit replay --select)");
    parser.addOption("seed", "S", "the stated audit's seed");
    parser.addOption("shards", "N", "the stated audit's shard count");
    addToleranceOptions(parser);
    parser.addOption("tape", "ID", "the tape when the case holds several");
    parser.addFlag("json", "print the merged run as JSON on stdout");
    parser.addFlag("quiet", "no progress on stderr");
    return runCommand("merge", parser, argc, argv, [&]() {
        const std::vector<std::string>& files = parser.positionals();
        const std::string& casePath = files.front();
        if (access(casePath.c_str(), F_OK) != 0)
            throw UsageError("case " + casePath + " does not exist; merge into the case the shards were made from");
        const std::vector<std::string> shardFiles(files.begin() + 1, files.end());
        const ShardMergeAudit audit = auditFromOptions(parser);
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        TerminalProgress progress(!parser.has("quiet"));
        ShardMergeResult result;
        try {
            result = mergeShards(store, shardFiles, audit, &progress);
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
                        static_cast<unsigned long long>(run.unverifiable), result.bitForBit() ? "passed" : result.passed() ? "consistent within rounding" : "FAILED");
            const PlannedAudit& planned = result.audit;
            std::printf("  held to planned audit %lld (planned %s): tolerance %s, calibration %s, program check %s\n",
                        static_cast<long long>(planned.id), planned.plannedAt.c_str(), planned.tolerance.c_str(),
                        planned.calibrationSha256.empty() ? "none" : planned.calibrationSha256.c_str(),
                        planned.programCheck ? std::string(programCheckName(*planned.programCheck)).c_str() : "unknown");
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
