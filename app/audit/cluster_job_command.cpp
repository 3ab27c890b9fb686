// slurm-script and kubernetes-job: a sharded replay written as a job for a cluster's own
// scheduler (core/workflow/cluster_job.h). The plan is made here first, so a bad selection,
// seed or shard count fails now rather than on every node, and the audit it asks for is
// recorded in the case, where the merge holds every shard to it.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <system_error>

#include "command_runner.h"
#include "commands.h"
#include "replay_options.h"
#include "shard_plan_options.h"
#include "zkdv/replay/planned_audit_request.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/store/case_store.h"
#include "zkdv/util/error.h"
#include "zkdv/workflow/cluster_job.h"

namespace zkdv::cli {

namespace {

void addPlanOptions(ArgumentParser& parser)
{
    parser.setPositionals("CASE", "the audit case (*.zkaudit); the nodes must see it at the same path", 1, false);
    addShardPlanOptions(parser);
    addToleranceOptions(parser);
    parser.addOption("device", "DEV", "each shard's replay device: cpu (default) or cuda:N");
    parser.addOption("output", "FILE", "write the job there (never over an existing file) instead of to stdout");
}

std::string absolutePath(const std::string& path)
{
    return std::filesystem::absolute(path).lexically_normal().string();
}

// The job's plan-defining fields from the command line, checked by planning the replay;
// `request` gets the audit the job asks for.
ClusterJob plannedJob(const ArgumentParser& parser, const char* command, ReplayRequest& request)
{
    const PlannedShards planned = planShardsFromOptions(parser);
    request = planned.request;
    readToleranceOptions(parser, request);
    const ShardedReplay& sharded = planned.sharded;
    const std::uint64_t count = planned.count;
    std::uint64_t costliestNs = 0;
    for (const ReplayShard& shard : sharded.shards.shards)
        costliestNs = std::max(costliestNs, shard.costNs);
    std::fprintf(stderr, "zkdv-audit %s: %zu selected transactions in %zu segments over %llu shards, the costliest about %.3f s\n",
                 command, sharded.selected.size(), sharded.plan.segments.size(), static_cast<unsigned long long>(count),
                 static_cast<double>(costliestNs) / 1e9);

    ClusterJob job;
    job.casePath = absolutePath(planned.casePath);
    job.selection = planned.request.selection.toString();
    job.seed = *planned.request.seed;
    job.shards = planned.count;
    job.tapeId = planned.request.tapeId;
    job.device = parser.value("device");
    job.tolerance = parser.value("tolerance");
    if (parser.has("calibration"))
        job.calibration = absolutePath(parser.value("calibration"));
    return job;
}

// Records the audit `request` asks for in the job's case, once the job's text is known to be
// writable, and names it in the job (the merge's --plan).
void recordAudit(ClusterJob& job, const ReplayRequest& request, const char* command)
{
    CaseStore store(job.casePath, CaseStore::Access::ReadWrite);
    try {
        job.plannedAuditId = recordPlannedAudit(store, request, job.shards).id;
    } catch (const ReplayError& error) {
        throw UsageError(error.what());
    }
    std::fprintf(stderr, "zkdv-audit %s: planned audit %lld recorded in %s; its merge takes only shards of it\n", command,
                 static_cast<long long>(job.plannedAuditId), job.casePath.c_str());
}

std::string ownExecutable()
{
    std::error_code error;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
    if (error)
        throw IoError("cannot find this zkdv-audit's own path (/proc/self/exe): " + error.message() + "; give --zkdv-audit PATH");
    return self.string();
}

// Creates `path` with `text`, refusing a file that exists: a job script is never written over
// another file.
void writeNewFile(const std::string& path, const std::string& text)
{
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        throw IoError("cannot create " + path + ": " + std::strerror(errno));
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    const bool closed = ::close(fd) == 0;
    if (!ok || !closed) {
        ::unlink(path.c_str());
        throw IoError("cannot write " + path);
    }
}

// Refuses an --output that exists before the audit is recorded, as writeNewFile would after.
void requireNewOutput(const ArgumentParser& parser)
{
    std::error_code error;
    if (parser.has("output") && std::filesystem::exists(std::filesystem::symlink_status(parser.value("output"), error)))
        throw IoError("cannot create " + parser.value("output") + ": it exists already, and a job is never written over a file");
}

void emit(const ArgumentParser& parser, const std::string& text)
{
    if (parser.has("output"))
        writeNewFile(parser.value("output"), text);
    else
        std::fputs(text.c_str(), stdout);
}

std::string jobText(const std::function<std::string()>& make)
{
    try {
        return make();
    } catch (const Error& error) {
        throw UsageError(error.what());
    }
}

}  // namespace

int runSlurmScript(int argc, char** argv)
{
    ArgumentParser parser("zkdv-audit slurm-script CASE --select SPEC --seed S --shards N [--tolerance T] [--calibration FILE] "
                          "[--partition P] [--gres G] [--time T] [--device DEV] [--tape ID] [--folder DIR] [--output FILE]",
                          "Writes an sbatch array script that replays the selection in N shards, one array task each\n"
                          "(docs/replay.md, \"Sharded replays\"), and merges them into CASE once every task has succeeded.\n"
                          "The nodes must see CASE, its tape, the folder and zkdv-audit at the same paths (a shared\n"
                          "file system); each shard writes a case of its own. Makes the folder, where Slurm writes the logs.\n"
                          "Records the audit asked for (tape, selection, seed, shards, tolerance, calibration) in CASE:\n"
                          "the merge refuses any shard of another.");
    addPlanOptions(parser);
    parser.addOption("partition", "P", "the Slurm partition (default: the cluster's)");
    parser.addOption("gres", "G", "generic resources of each shard's task, e.g. gpu:1");
    parser.addOption("time", "T", "each task's time limit, as sbatch --time reads it");
    parser.addOption("folder", "DIR", "the shard cases and logs (default: CASE without .zkaudit, then .shards-S-N)");
    parser.addOption("zkdv-audit", "PATH", "zkdv-audit as the nodes run it (default: this executable)");
    return runCommand("slurm-script", parser, argc, argv, [&]() {
        ReplayRequest request;
        ClusterJob job = plannedJob(parser, "slurm-script", request);
        job.auditExecutable = parser.has("zkdv-audit") ? absolutePath(parser.value("zkdv-audit")) : ownExecutable();
        job.folder = absolutePath(parser.has("folder") ? parser.value("folder") : defaultShardFolder(job.casePath, job.seed, job.shards));
        job.partition = parser.value("partition");
        job.gres = parser.value("gres");
        job.time = parser.value("time");
        jobText([&] { return slurmArrayScript(job); });  // refuses an unsafe value before anything is recorded
        requireNewOutput(parser);
        recordAudit(job, request, "slurm-script");
        const std::string script = jobText([&] { return slurmArrayScript(job); });
        std::filesystem::create_directories(job.folder);
        emit(parser, script);
        std::fprintf(stderr, "zkdv-audit slurm-script: shard cases and logs go to %s; submit with: sbatch %s\n", job.folder.c_str(),
                     parser.has("output") ? parser.value("output").c_str() : "FILE");
        return kExitOk;
    });
}

int runKubernetesJob(int argc, char** argv)
{
    ArgumentParser parser("zkdv-audit kubernetes-job CASE --select SPEC --seed S --shards N --image IMG --claim PVC "
                          "[--tolerance T] [--calibration FILE] [--mount PATH] [--parallelism K] [--device DEV] [--tape ID] [--output FILE]",
                          "Writes a Kubernetes Indexed Job (batch/v1, completionMode Indexed) that replays the selection\n"
                          "in N shards, one index each (docs/replay.md, \"Sharded replays\"). The claim holds CASE and its\n"
                          "tape at its root; the shard cases go to a folder beside them. The manifest's opening comment\n"
                          "says how to wait for it and merge the shards into CASE. Records the audit asked for in CASE,\n"
                          "as slurm-script does; a calibration file goes on the claim's root too.");
    addPlanOptions(parser);
    parser.addOption("image", "IMG", "a container image with zkdv-audit on its PATH");
    parser.addOption("claim", "PVC", "the PersistentVolumeClaim that holds the case");
    parser.addOption("mount", "PATH", "where the claim is mounted in the pods (default /audit)");
    parser.addOption("parallelism", "K", "pods at once (default: N, at most 16)");
    parser.addOption("zkdv-audit", "PATH", "zkdv-audit as the pods run it (default: zkdv-audit, found on the image's PATH)");
    return runCommand("kubernetes-job", parser, argc, argv, [&]() {
        if (!parser.has("image") || !parser.has("claim"))
            throw UsageError("--image IMG and --claim PVC are required");
        ReplayRequest request;
        ClusterJob job = plannedJob(parser, "kubernetes-job", request);
        job.auditExecutable = parser.value("zkdv-audit", "zkdv-audit");
        job.image = parser.value("image");
        job.claim = parser.value("claim");
        job.mountPath = parser.value("mount", job.mountPath);
        job.parallelism = static_cast<unsigned>(std::min<std::uint64_t>(parser.unsignedValue("parallelism", 0), kMaxShards));
        jobText([&] { return kubernetesIndexedJob(job); });  // refuses an unsafe value before anything is recorded
        requireNewOutput(parser);
        recordAudit(job, request, "kubernetes-job");
        emit(parser, jobText([&] { return kubernetesIndexedJob(job); }));
        return kExitOk;
    });
}

}  // namespace zkdv::cli
