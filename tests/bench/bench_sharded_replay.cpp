// Benchmark of sharded replays (docs/replay.md, "Sharded replays"), side by side in one run:
//
//   1. the demo tape's `--select all` replayed as one run, then as two shards replayed at the
//      same time on this machine and merged (wall time of both shards and the merge), with
//      the workers per replay at their default and at one, so the ratio shows what sharding
//      gains where one run does not already fill the cores;
//   2. the merge of synthetic shard cases holding `--merge-transactions` transaction results
//      (each with one comparison), as the merge of a long audit's results;
//   3. the plan and merge at `--scale-shards` shards over a synthetic tape: planning time,
//      one shard case's size after its run, the merge's time and the merged case's size.
//
//   bench_sharded_replay [--dir DIR] [--demo-steps N] [--merge-transactions N] [--scale-shards N]
//
// zkdv-audit runs as child processes (its replays as a user runs them); parts 2 and 3 call the
// core directly and make their shards' results up, as only the merge is measured there.

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "made_up_shard.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/store/case_store.h"
#include "zkdv/workflow/shard_merge.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace zkdv;

namespace {

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

pid_t spawn(const std::vector<std::string>& command)
{
    std::vector<char*> argv;
    for (const std::string& part : command)
        argv.push_back(const_cast<char*>(part.c_str()));
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        execv(argv[0], argv.data());
        std::perror("execv");
        _exit(127);
    }
    return pid;
}

int await(pid_t pid)
{
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

void require(bool ok, const std::string& what)
{
    if (!ok) {
        std::fprintf(stderr, "bench_sharded_replay: %s\n", what.c_str());
        std::exit(1);
    }
}

void runOrDie(const std::vector<std::string>& command)
{
    const int code = await(spawn(command));
    require(code == 0, command[1] + " exited " + std::to_string(code));
}

// Part 1: one run against two shards at once and their merge, with the given worker count
// per replay ("" = default).
void demoComparison(const std::string& audit, const std::string& dir, const std::string& tape, const std::string& threads)
{
    const std::string tag = threads.empty() ? "default" : threads;
    const std::string single = dir + "/single-" + tag + ".zkaudit", sharded = dir + "/sharded-" + tag + ".zkaudit";
    for (const std::string& path : {single, sharded}) {
        fs::remove(path);
        runOrDie({audit, "ingest", tape, "--case", path, "--quiet"});
    }
    std::vector<std::string> extra;
    if (!threads.empty())
        extra = {"--threads", threads};
    std::vector<std::string> one = {audit, "replay", single, "--select", "all", "--seed", "1", "--quiet"};
    one.insert(one.end(), extra.begin(), extra.end());
    auto start = Clock::now();
    require(await(spawn(one)) <= 1, "the single replay failed");
    const double singleSeconds = since(start);

    std::vector<std::string> shardFiles;
    start = Clock::now();
    std::vector<pid_t> running;
    for (int i = 0; i < 2; ++i) {
        shardFiles.push_back(dir + "/shard-" + tag + "-" + std::to_string(i) + ".zkaudit");
        fs::remove(shardFiles.back());
        std::vector<std::string> part = {audit, "replay", sharded, "--select", "all", "--seed", "1", "--quiet",
                                         "--shard", std::to_string(i) + "/2", "--into", shardFiles.back()};
        part.insert(part.end(), extra.begin(), extra.end());
        running.push_back(spawn(part));
    }
    for (pid_t pid : running)
        require(await(pid) <= 1, "a shard's replay failed");
    const double shardSeconds = since(start);
    const auto mergeStart = Clock::now();
    // No job was planned in this case: the merge is told the audit the shards must be of.
    std::vector<std::string> merge = {audit, "merge", sharded, "--quiet", "--select", "all", "--seed", "1", "--shards", "2"};
    merge.insert(merge.end(), shardFiles.begin(), shardFiles.end());
    require(await(spawn(merge)) <= 1, "the merge failed");
    const double mergeSeconds = since(mergeStart);
    const double total = since(start);
    std::printf("demo --select all, workers %-7s  one run %7.2f s | 2 shards at once %7.2f s + merge %5.2f s = %7.2f s | ratio %.3f\n",
                tag.c_str(), singleSeconds, shardSeconds, mergeSeconds, total, total / singleSeconds);
}

std::string ingestSynthetic(const std::string& dir, const std::string& name, std::uint64_t steps)
{
    SyntheticDemoOptions options;
    options.steps = steps;
    options.batchSize = 2;
    options.features = 4;
    options.classes = 3;
    options.overwrite = true;
    const std::string tape = dir + "/" + name + ".zkdv", casePath = dir + "/" + name + ".zkaudit";
    writeSyntheticDemoTape(tape, options);
    fs::remove(casePath);
    CaseStore(casePath, CaseStore::Access::ReadWrite).ingestTape(tape);
    return casePath;
}

// Writes `count` shard cases of `casePath`'s --select all with made-up results; returns them.
std::vector<std::string> madeUpShards(const std::string& casePath, const std::string& dir, unsigned count, double* planSeconds)
{
    {
        CaseStore source(casePath, CaseStore::Access::ReadOnly);
        ReplayRequest request;
        request.selection = SelectionSpec::parse("all");
        request.seed = 1;
        const auto planStart = Clock::now();
        planShardedReplay(source, request, count);
        if (planSeconds)
            *planSeconds = since(planStart);
    }
    test::MadeUpShard options;
    options.selection = "all";
    options.seed = 1;
    options.count = count;
    test::recordMadeUpPlan(casePath, options);
    std::vector<std::string> files;
    for (unsigned i = 0; i < count; ++i) {
        files.push_back(dir + "/made-up-" + std::to_string(count) + "-" + std::to_string(i) + ".zkaudit");
        fs::remove(files.back());
        test::writeMadeUpShard(casePath, files.back(), i, options);
    }
    return files;
}

void mergeTiming(const std::string& casePath, const std::vector<std::string>& shards, const char* what)
{
    const auto start = Clock::now();
    CaseStore store(casePath, CaseStore::Access::ReadWrite);
    const ShardMergeResult result = mergeShards(store, shards);
    const double seconds = since(start);
    require(result.passed(), "the made-up merge did not pass");
    std::printf("%s: %zu shards, %llu transaction results merged in %.2f s; merged case %.1f MiB, one shard case %.1f KiB\n", what,
                shards.size(), static_cast<unsigned long long>(result.run.replayed), seconds,
                static_cast<double>(fs::file_size(casePath)) / (1 << 20), static_cast<double>(fs::file_size(shards.front())) / 1024);
}

}  // namespace

int main(int argc, char** argv)
{
    std::string dir = (fs::temp_directory_path() / "zkdv-bench-shards").string();
    std::uint64_t demoSteps = 240, mergeTransactions = 100000;
    unsigned scaleShards = 1000;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string option = argv[i];
        if (option == "--dir")
            dir = argv[i + 1];
        else if (option == "--demo-steps")
            demoSteps = std::stoull(argv[i + 1]);
        else if (option == "--merge-transactions")
            mergeTransactions = std::stoull(argv[i + 1]);
        else if (option == "--scale-shards")
            scaleShards = static_cast<unsigned>(std::stoul(argv[i + 1]));
    }
    fs::create_directories(dir);
    const std::string audit = ZKDV_AUDIT_EXECUTABLE;
    std::printf("bench_sharded_replay on %ld cores\n", sysconf(_SC_NPROCESSORS_ONLN));

    const std::string tape = dir + "/demo.zkdv";
    runOrDie({audit, "demo", "--out", tape, "--steps", std::to_string(demoSteps), "--overwrite"});
    demoComparison(audit, dir, tape, "");
    demoComparison(audit, dir, tape, "1");

    const std::string big = ingestSynthetic(dir, "merge-" + std::to_string(mergeTransactions), mergeTransactions);
    mergeTiming(big, madeUpShards(big, dir, 2, nullptr), "merge");

    const std::string scaled = ingestSynthetic(dir, "scale", 12ull * scaleShards);
    double planSeconds = 0;
    const std::vector<std::string> shards = madeUpShards(scaled, dir, scaleShards, &planSeconds);
    std::printf("plan: %u shards of %llu transactions planned in %.3f s\n", scaleShards, 12ull * scaleShards, planSeconds);
    mergeTiming(scaled, shards, "scale");
    for (const std::string& file : shards)
        fs::remove(file);
    return 0;
}
