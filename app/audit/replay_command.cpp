#include <cstdio>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <memory>

#include "command_runner.h"
#include "replay_options.h"
#include "trusted_key_options.h"
#include "shard_case_file.h"
#include "replay_json.h"
#include "commands.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/store/case_store.h"
#include "zkdv/util/json_text.h"
#include "zkdv/workflow/replay_summary_text.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/workflow/replay_precheck.h"

namespace zkdv::cli {

int runReplay(int argc, char** argv)
{
    ArgumentParser parser(
        "zkdv-audit replay CASE --select SPEC [--seed S] [--shard I/N --into FILE] [--device DEV] [--threads N] [--intra-op-threads N]\n"
        "                  [--kernels K] [--tolerance T] [--calibration FILE] [--trusted-key KEY]... [--require-trusted] [--json]",
        "Replays chosen transactions of a tape in the case from their nearest snapshots with the\n"
        "tape's sealed program and optimizer contract, compares loss, update fingerprints,\n"
        "recorded deltas, state digests and the next snapshot, and stores verdicts and divergence\n"
        "metrics in the case.\n"
        "SPEC: all | ids:3,17,40 | range:100-199 | random:50 | random:5% | stratified:50 |\n"
        "      stratified:5% | topq:10 | topq:1% | sampled\n"
        "The same SPEC and seed choose the same transactions on every machine.\n"
        "The program runs in worker processes with a time budget per transaction and a memory\n"
        "limit; what it prints goes to CASE.replay-RUN.log beside the case.\n"
        "With --shard I/N --into FILE it replays only shard I of N of the selection (docs/replay.md,\n"
        "\"Sharded replays\"; see zkdv-audit plan) into a new case FILE of its own, reading CASE\n"
        "only; zkdv-audit merge joins the N shard cases into CASE.\n"
        "With --require-trusted it replays only a tape a trusted key signed (--trusted-key, the\n"
        "trainer-keys folder; docs/signing.md) and otherwise refuses before replaying (exit 1).\n"
        "Exit 0 when every replayed transaction is exact or within tolerance, 1 when any diverged\n"
        "or is unverifiable, 2 on usage errors, an unreadable case or keyring, or a device that is\n"
        "not present.");
    parser.setPositionals("CASE", "the audit case (*.zkaudit)", 1, false);
    parser.addOption("select", "SPEC", "which transactions to replay (required)");
    parser.addOption("seed", "S",
                     "seed of random and stratified selections (default: 64 bits drawn from the operating system now, printed and "
                     "stored with the run; give S only to redo an audit, or with a seed the trainer cannot know)");
    parser.addOption("shard", "I/N", "replay only shard I (from 0) of N of the selection: whole segments, as zkdv-audit plan splits them; needs --seed and --into");
    parser.addOption("into", "FILE", "with --shard: the new case the shard's run is written into (it must not exist); CASE is only read");
    parser.addOption("device", "DEV", "cpu (default) or cuda:N");
    parser.addOption("threads", "N", "segments replayed at once on the CPU, each in a worker process (default and most: one per core)");
    parser.addOption("intra-op-threads", "N",
                     "libtorch threads per replay worker (default: the tape's recorded count, producer.intra_op_threads, "
                     "on the CPU; libtorch's own when the tape records none, and on CUDA)");
    parser.addOption("kernels", "K",
                     "recorded (default): the workers run the training's kernel settings (ATEN_CPU_CAPABILITY, MKL_CBWR, "
                     "ONEDNN_MAX_CPU_ISA, ... as the tape records them, capped at the training CPU's vector level on another CPU); "
                     "host: as this shell has them");
    addToleranceOptions(parser);
    parser.addOption("tape", "ID", "the tape to replay when the case holds several");
    parser.addOption("program", "FILE", "a sealed program file to use when the case holds none");
    const ReplayLimits limits;
    parser.addOption("time-budget-factor", "X",
                     "a transaction may take X times the median time this replay measured for its transactions (default " +
                         std::to_string(int(limits.timeFactor)) + "; the tape's recorded times are not used)");
    parser.addOption("time-budget-floor", "S", "seconds every transaction may take at least (default " + std::to_string(int(limits.transactionFloorSeconds)) + ")");
    parser.addOption("first-transaction-budget", "S",
                     "seconds a transaction may take before this replay has measured one (default " +
                         std::to_string(int(limits.firstTransactionSeconds)) + ")");
    parser.addOption("memory-limit", "MIB", "memory of each CPU replay worker in MiB (default: 1024 + 16 per intra-op thread + 16 x the program, largest snapshot and transaction)");
    addTrustedKeyOptions(parser, "refuse to replay (exit 1)");
    parser.addFlag("json", "print JSON on stdout");
    parser.addFlag("quiet", "no progress on stderr");
    return runCommand("replay", parser, argc, argv, [&]() {
        if (!parser.has("select"))
            throw UsageError("--select SPEC is required (all, ids:…, range:A-B, random:N, random:P%, stratified:N, topq:Q, sampled)");
        ReplayRequest request;
        try {
            request.selection = SelectionSpec::parse(parser.value("select"));
        } catch (const Error& error) {
            throw UsageError(error.what());
        }
        readToleranceOptions(parser, request);
        readReplayWorkerOptions(parser, request);
        request.tapeId = static_cast<std::int64_t>(parser.unsignedValue("tape", 0));
        request.programPath = parser.value("program");
        request.limits.timeFactor = parser.doubleValue("time-budget-factor", limits.timeFactor, 0.0, 1e6);
        request.limits.transactionFloorSeconds = parser.doubleValue("time-budget-floor", limits.transactionFloorSeconds, 0.0, 1e6);
        request.limits.firstTransactionSeconds = parser.doubleValue("first-transaction-budget", limits.firstTransactionSeconds, 0.0, 1e6);
        request.limits.memoryLimitBytes = parser.unsignedValue("memory-limit", 0) << 20;
        if (parser.has("memory-limit") && (request.limits.memoryLimitBytes == 0 || request.limits.memoryLimitBytes >> 20 != parser.unsignedValue("memory-limit", 0)))
            throw UsageError("--memory-limit must be a positive number of MiB");
        if (parser.has("threads") && request.threads == 0)
            throw UsageError("--threads must be at least 1");

        if (parser.has("shard") != parser.has("into"))
            throw UsageError("--shard I/N and --into FILE go together: a shard's run is written into a case of its own");
        if (parser.has("shard")) {
            try {
                request.shard = ShardSpec::parse(parser.value("shard"));
            } catch (const Error& error) {
                throw UsageError(error.what());
            }
            if (!request.seed)
                throw UsageError("--shard needs --seed S: every shard must draw the same selection");
        }

        const TrustedKeyOptions trust = readTrustedKeyOptions(parser);  // a keyring that cannot be used: exit 2
        const std::string& casePath = parser.positionals().front();
        if (access(casePath.c_str(), F_OK) != 0)
            throw UsageError("case " + casePath + " does not exist; create it with `zkdv-audit ingest TAPE --case " + casePath + "`");
        std::optional<ShardCase> shardCase;
        if (request.shard)
            shardCase.emplace(casePath, parser.value("into"), request);
        auto opened = std::make_unique<CaseStore>(shardCase ? shardCase->partialPath() : casePath, CaseStore::Access::ReadWrite);
        CaseStore& store = *opened;
        // The same warning the workstation gives before such a replay; the run still goes, and
        // its report says that nothing was verified.
        const std::vector<CaseTape> tapes = store.tapes();
        for (const CaseTape& tape : tapes)
            if (tape.id == request.tapeId || (request.tapeId == 0 && tapes.size() == 1)) {
                // Who signed it was verified at ingest; whether that key is trusted is this auditor's keyring's say.
                const SignatureTrust signer = trust.keyring.trustOf(tape.isSigned() ? std::optional<std::string>(tape.signerKeyId) : std::nullopt);
                if (trust.required && signer != SignatureTrust::Trusted) {
                    std::fprintf(stderr, "zkdv-audit replay: refusing to replay tape %lld: %s, and --require-trusted requires a trusted signer\n",
                                 static_cast<long long>(tape.id), untrustedSignerText(signer, tape.signerKeyId).c_str());
                    return kExitCheckFailed;
                }
                if (signer == SignatureTrust::UnknownKey || signer == SignatureTrust::UnsignedExpected)
                    std::fprintf(stderr, "zkdv-audit replay: warning: %s\n", untrustedSignerText(signer, tape.signerKeyId).c_str());
                if (const std::string why = whyReplayVerifiesNothing(tape, !request.programPath.empty()); !why.empty())
                    std::fprintf(stderr, "zkdv-audit replay: warning: this replay can verify nothing: %s\n", why.c_str());
            }
        const ReplaySummary summary = runReplayInTerminal(store, request, parser.has("quiet"));
        const std::vector<StoredReplayRun> runs = ReplayStore(store.database()).runs(summary.tapeId);
        opened.reset();
        if (shardCase)
            shardCase->keep();
        if (parser.has("json")) {
            nlohmann::json out = replaySummaryJson(summary);
            // How the run replayed, as stored with it: the defaults resolved (docs/cli-json.md).
            for (const StoredReplayRun& run : runs)
                if (run.id == summary.runId) {
                    out["tolerance"] = run.tolerance;
                    out["threads"] = run.threads;
                    out["intra_op_threads"] = run.intraOpThreads;
                }
            out["shard"] = request.shard ? nlohmann::json{{"index", request.shard->index}, {"count", request.shard->count}, {"case", parser.value("into")}}
                                         : nlohmann::json();
            std::printf("%s\n", toJsonText(out, 2).c_str());
        } else {
            std::printf("%s\n", replaySummaryHeadline(summary).c_str());
            for (const std::string& line : replaySummaryDetails(summary))
                std::printf("  %s\n", line.c_str());
        }
        if (!summary.sealProblem.empty())
            std::fprintf(stderr, "zkdv-audit replay: warning: run %lld was stored unsigned, so no report can vouch for its results: %s\n",
                         static_cast<long long>(summary.runId), summary.sealProblem.c_str());
        // The program's own output is kept out of stdout, where it could pass for results.
        if (!summary.workerLog.empty())
            std::fprintf(stderr, "zkdv-audit replay: the replay workers' output is in %s\n", summary.workerLog.c_str());
        return summary.passed() ? kExitOk : kExitCheckFailed;
    });
}

}  // namespace zkdv::cli
