#pragma once
// A sharded replay (docs/replay.md, "Sharded replays") handed to a cluster's own scheduler:
// a Slurm array script for sbatch, and a Kubernetes Indexed Job manifest. Each array task
// or index replays one shard into a case of its own; a merge puts the shards into the case.

#include <cstdint>
#include <string>

namespace zkdv {

struct ClusterJob {
    // zkdv-audit as the nodes run it: an absolute path for Slurm (a shared file system), the
    // image's command for Kubernetes.
    std::string auditExecutable;
    // The auditor's case, absolute: every shard reads it, the merge writes into it.
    std::string casePath;
    std::string selection;  // canonical SelectionSpec text
    std::uint64_t seed = 0;
    unsigned shards = 1;
    std::int64_t tapeId = 0;  // 0: the case's only tape
    std::string device;       // "": the replay's default (cpu)
    std::string tolerance;    // --tolerance as the auditor wrote it; "": the replay's defaults
    // The calibration file every shard replays with, absolute; "": none. A Kubernetes job
    // reads it from the claim's root, beside the case.
    std::string calibration;
    // The planned audit recorded in the case for this job (zkdv/store/planned_audits.h), which
    // the merge holds every shard to (`merge --plan ID`); 0: the case's newest.
    std::int64_t plannedAuditId = 0;
    // Where the shard cases and the logs go, absolute; "": defaultShardFolder(casePath, seed, shards).
    std::string folder;

    // Slurm (each empty: the cluster's default).
    std::string partition;
    std::string gres;  // e.g. gpu:1, for each shard's task only
    std::string time;  // each task's limit, as sbatch --time reads it

    // Kubernetes. The claim holds the case (with the tape it names) and the shard folder at
    // its root; the manifest names them under mountPath.
    std::string image;
    std::string claim;
    std::string mountPath = "/audit";
    unsigned parallelism = 0;  // pods at once; 0: min(shards, 16)
};

// "<case without .zkaudit>.shards-<seed>-<shards>": a folder per plan, so the shard cases of
// another seed or N never mix with these.
std::string defaultShardFolder(const std::string& casePath, std::uint64_t seed, unsigned shards);

// The name both schedulers show: "zkdv-" and the case's file name in lower-case letters,
// digits and hyphens, then the seed (a Kubernetes object name: at most 52 characters, so
// that the pods' host names, the name and "-<index>", fit 63).
std::string clusterJobName(const ClusterJob& job);

// A bash script to submit with `sbatch FILE`: an array of `shards` tasks, each replaying its
// shard (`--shard $SLURM_ARRAY_TASK_ID/N --into FOLDER/shard-I.zkaudit`), and task 0 submits
// the merge of all shards into the case, run once every task has succeeded (afterok). A
// replay's exit 1 (a divergence) is a task's success: the merge reports it. The folder must
// exist when the script is submitted (Slurm opens the task logs in it). Throws Error for a
// value no script can carry safely (a newline or NUL anywhere, a backslash in the folder,
// which Slurm's #SBATCH parser drops, a relative path, no shards).
std::string slurmArrayScript(const ClusterJob& job);

// A batch/v1 Job manifest (YAML): completionMode Indexed, one pod per shard replaying
// `--shard $JOB_COMPLETION_INDEX/N`, the case and folder on the claim; the commands that
// wait for it and merge the shards are in its opening comment. Throws Error as
// slurmArrayScript does, and without an image or a claim.
std::string kubernetesIndexedJob(const ClusterJob& job);

}  // namespace zkdv
