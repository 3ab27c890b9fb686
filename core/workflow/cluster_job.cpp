#include "zkdv/workflow/cluster_job.h"

#include <algorithm>
#include <string_view>

#include <nlohmann/json.hpp>

#include "zkdv/audit/shard_plan.h"
#include "zkdv/util/error.h"
#include "zkdv/util/shell_word.h"

namespace zkdv {

namespace {

constexpr unsigned kDefaultParallelism = 16;
constexpr std::size_t kMaxJobNameLength = 52;
// Ends the merge job's script that task 0 hands sbatch on its standard input; every line
// before it is generated and starts otherwise.
constexpr std::string_view kMergeScriptEnd = "ZKDV_MERGE_JOB";

void refuseUnsafe(std::string_view what, std::string_view value)
{
    if (value.find('\n') != std::string_view::npos || value.find('\r') != std::string_view::npos ||
        value.find('\0') != std::string_view::npos)
        throw Error(std::string(what) + " \"" + std::string(value.substr(0, value.find_first_of(std::string_view("\n\r\0", 3)))) +
                    "…\" holds a line break or NUL, which a job script cannot carry");
}

void requireAbsolute(std::string_view what, const std::string& path)
{
    if (path.empty() || path.front() != '/')
        throw Error(std::string(what) + " \"" + path + "\" is not an absolute path: the nodes run elsewhere");
}

std::string fileName(const std::string& path)
{
    const std::size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string withoutSuffix(const std::string& text, std::string_view suffix)
{
    if (text.size() > suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0)
        return text.substr(0, text.size() - suffix.size());
    return text;
}

std::string folderOf(const ClusterJob& job)
{
    return job.folder.empty() ? defaultShardFolder(job.casePath, job.seed, job.shards) : job.folder;
}

// What both schedulers need checked; returns the shard folder.
std::string validated(const ClusterJob& job)
{
    if (job.shards < 1 || job.shards > kMaxShards)
        throw Error("a cluster job needs 1 to " + std::to_string(kMaxShards) + " shards, not " + std::to_string(job.shards));
    const std::string folder = folderOf(job);
    for (const auto& [what, value] : {std::pair<std::string_view, const std::string&>{"the zkdv-audit executable", job.auditExecutable},
                                      {"the case path", job.casePath},
                                      {"the selection", job.selection},
                                      {"the device", job.device},
                                      {"the tolerance", job.tolerance},
                                      {"the calibration", job.calibration},
                                      {"the shard folder", folder},
                                      {"the partition", job.partition},
                                      {"the gres", job.gres},
                                      {"the time limit", job.time},
                                      {"the image", job.image},
                                      {"the claim", job.claim},
                                      {"the mount path", job.mountPath}})
        refuseUnsafe(what, value);
    if (job.auditExecutable.empty())
        throw Error("a cluster job needs the zkdv-audit executable the nodes run");
    if (job.selection.empty())
        throw Error("a cluster job needs a selection");
    requireAbsolute("the case path", job.casePath);
    requireAbsolute("the shard folder", folder);
    if (!job.calibration.empty())
        requireAbsolute("the calibration", job.calibration);
    return folder;
}

// The replay options every shard shares, after --shard and --into.
std::string replayOptions(const ClusterJob& job)
{
    std::string options;
    if (job.tapeId != 0)
        options += " --tape " + std::to_string(job.tapeId);
    if (!job.device.empty())
        options += " --device " + shellWord(job.device);
    // The planned audit's tolerance and calibration: the merge refuses a shard judged otherwise.
    if (!job.tolerance.empty())
        options += " --tolerance " + shellWord(job.tolerance);
    if (!job.calibration.empty())
        options += " --calibration " + shellWord(job.calibration);
    return options + " --quiet";
}

// The shell lines that replay shard "$<indexVariable>" and map its exit status; `extra`
// goes after the shared options.
std::string replayLines(const ClusterJob& job, std::string_view indexVariable, std::string_view separator, std::string_view extra = {})
{
    const std::string index = "$" + std::string(indexVariable);
    const std::string n = std::to_string(job.shards);
    return "\"$audit\" replay \"$case_file\" --select " + shellWord(job.selection) + " --seed " + std::to_string(job.seed) +
           " --shard \"" + index + "/" + n + "\" --into \"$shard_folder/shard-" + index + ".zkaudit\"" + replayOptions(job) + std::string(extra) +
           std::string(separator) + "status=$?" + std::string(separator) +
           "if [ \"$status\" -eq 1 ]; then exit 0; fi" + std::string(separator) + "exit \"$status\"";
}

// The merge of every shard of the plan, run in the shard folder so that 100,000 names fit one
// command line; bash's brace expansion names each expected file, so a missing one is named.
// It holds the shards to the audit recorded for this job, not to a later one.
std::string mergeCommand(const ClusterJob& job, const std::string& audit, const std::string& casePath)
{
    const std::string plan = job.plannedAuditId != 0 ? " --plan " + std::to_string(job.plannedAuditId) : std::string();
    return shellWord(audit) + " merge " + shellWord(casePath) + plan + " shard-{0.." + std::to_string(job.shards - 1) + "}.zkaudit";
}

// A value on an #SBATCH line: sbatch reads double quotes with \" inside, but drops a backslash
// that escapes anything else.
std::string sbatchValue(std::string_view what, std::string_view value)
{
    if (value.find('\\') != std::string_view::npos)
        throw Error(std::string(what) + " \"" + std::string(value) + "\" holds a backslash, which sbatch's script parser drops");
    std::string quoted = "\"";
    for (char c : value)
        quoted += c == '"' ? std::string_view("\\\"") : std::string_view(&c, 1);
    return quoted + "\"";
}

// Slurm reads % in an output file name as a pattern (%a, %j); %% is a plain %.
std::string outputPattern(const std::string& folder, std::string_view file)
{
    std::string pattern;
    for (char c : folder)
        pattern += c == '%' ? std::string_view("%%") : std::string_view(&c, 1);
    return pattern + "/" + std::string(file);
}

std::string yamlString(std::string_view text)
{
    return nlohmann::json(std::string(text)).dump();
}

// Kubernetes expands $(NAME) in a container's command and reads $$ as $: doubling every $
// hands the shell the script as written.
std::string kubernetesEscaped(std::string_view command)
{
    std::string escaped;
    for (char c : command)
        escaped += c == '$' ? std::string_view("$$") : std::string_view(&c, 1);
    return escaped;
}

}  // namespace

std::string defaultShardFolder(const std::string& casePath, std::uint64_t seed, unsigned shards)
{
    return withoutSuffix(casePath, ".zkaudit") + ".shards-" + std::to_string(seed) + "-" + std::to_string(shards);
}

std::string clusterJobName(const ClusterJob& job)
{
    std::string stem;
    for (char c : withoutSuffix(fileName(job.casePath), ".zkaudit")) {
        const char lower = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
        const bool keep = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9');
        if (keep)
            stem += lower;
        else if (!stem.empty() && stem.back() != '-')
            stem += '-';
    }
    const std::string seed = "-" + std::to_string(job.seed);
    const std::string prefix = "zkdv-";
    stem = stem.substr(0, kMaxJobNameLength - prefix.size() - seed.size());
    while (!stem.empty() && stem.back() == '-')
        stem.pop_back();
    return prefix + (stem.empty() ? "replay" : stem) + seed;
}

std::string slurmArrayScript(const ClusterJob& job)
{
    const std::string folder = validated(job);
    const std::string name = clusterJobName(job);
    std::string s = "#!/bin/bash\n";
    s += "# A sharded replay of " + job.casePath + " (" + std::to_string(job.shards) + " shards), written by zkdv-audit slurm-script.\n";
    s += "# Submit with: sbatch THIS_FILE. Each array task replays one shard into " + folder + "/shard-I.zkaudit\n";
    s += "# (its log: shard-I.out); task 0 submits the merge of every shard into the case, which runs once\n";
    s += "# all tasks have succeeded (its log: merge.out). docs/replay.md, \"Sharded replays\".\n";
    s += "#SBATCH --job-name=" + sbatchValue("the job name", name) + "\n";
    s += "#SBATCH --array=0-" + std::to_string(job.shards - 1) + "\n";
    s += "#SBATCH --output=" + sbatchValue("the shard folder", outputPattern(folder, "shard-%a.out")) + "\n";
    // A requeued task 0 would submit a second merge.
    s += "#SBATCH --no-requeue\n";
    if (!job.partition.empty())
        s += "#SBATCH --partition=" + sbatchValue("the partition", job.partition) + "\n";
    if (!job.gres.empty())
        s += "#SBATCH --gres=" + sbatchValue("the gres", job.gres) + "\n";
    if (!job.time.empty())
        s += "#SBATCH --time=" + sbatchValue("the time limit", job.time) + "\n";
    s += "set -u\n";
    s += "audit=" + shellWord(job.auditExecutable) + "\n";
    s += "case_file=" + shellWord(job.casePath) + "\n";
    s += "shard_folder=" + shellWord(folder) + "\n";
    s += "shard=$SLURM_ARRAY_TASK_ID\n\n";
    s += "if [ \"$shard\" = 0 ]; then\n";
    s += "    # afterok: the merge runs once every task has succeeded; a failed task cancels it.\n";
    s += "    sbatch --dependency=\"afterok:$SLURM_ARRAY_JOB_ID\" --kill-on-invalid-dep=yes --job-name=" + shellWord(name + "-merge") +
         " --output=" + shellWord(outputPattern(folder, "merge.out"));
    if (!job.partition.empty())
        s += " --partition=" + shellWord(job.partition);
    s += " <<'" + std::string(kMergeScriptEnd) + "' || exit 2\n";
    s += "#!/bin/bash\n";
    s += "cd " + shellWord(folder) + " || exit 2\n";
    s += "exec " + mergeCommand(job, job.auditExecutable, job.casePath) + "\n";
    s += std::string(kMergeScriptEnd) + "\n";
    s += "fi\n\n";
    s += "# Exit 1 means a transaction diverged or could not be verified: the shard's case holds the\n";
    s += "# verdicts and the merge reports them. Any other failure fails the task, and so the merge.\n";
    // As many replay workers as CPUs Slurm gave the task (one unless --cpus-per-task): more
    // would only contend with the other tasks on the node.
    s += replayLines(job, "shard", "\n", " --threads \"${SLURM_CPUS_PER_TASK:-1}\"") + "\n";
    return s;
}

std::string kubernetesIndexedJob(const ClusterJob& job)
{
    const std::string folder = validated(job);
    if (job.image.empty() || job.claim.empty())
        throw Error("a Kubernetes job needs an image and a persistent volume claim");
    requireAbsolute("the mount path", job.mountPath);
    std::string mount = job.mountPath;
    while (mount.size() > 1 && mount.back() == '/')
        mount.pop_back();
    const std::string under = mount == "/" ? "/" : mount + "/";
    const std::string casePath = under + fileName(job.casePath);
    const std::string shardFolder = under + fileName(folder);
    const std::string name = clusterJobName(job);
    const unsigned parallelism = job.parallelism != 0 ? job.parallelism : std::min(job.shards, kDefaultParallelism);
    ClusterJob inPod = job;  // the calibration on the claim, beside the case
    if (!job.calibration.empty())
        inPod.calibration = under + fileName(job.calibration);
    const std::string script = "audit=" + shellWord(job.auditExecutable) + "; case_file=" + shellWord(casePath) +
                               "; shard_folder=" + shellWord(shardFolder) + "; " + replayLines(inPod, "JOB_COMPLETION_INDEX", "; ");

    std::string y = "# A sharded replay of " + job.casePath + " (" + std::to_string(job.shards) +
                    " shards) as a Kubernetes Indexed Job, written by zkdv-audit kubernetes-job.\n";
    y += "# The claim " + job.claim + " holds the case (and the tape it names" +
         (job.calibration.empty() ? std::string() : ", and the calibration " + fileName(job.calibration)) + ") at its root, mounted at " +
         mount + ";\n";
    y += "# index I replays shard I into " + shardFolder + "/shard-I.zkaudit. Needs Kubernetes 1.29 or later\n";
    y += "# (backoffLimitPerIndex). Run, then merge where the claim is mounted at " + mount + ":\n";
    y += "#   kubectl apply -f THIS_FILE\n";
    y += "#   kubectl wait --for=condition=complete --timeout=-1s job/" + name + "\n";
    y += "#   cd " + shellWord(shardFolder) + " && " + mergeCommand(job, "zkdv-audit", casePath) + "    # bash\n";
    y += "apiVersion: batch/v1\n";
    y += "kind: Job\n";
    y += "metadata:\n";
    y += "  name: " + yamlString(name) + "\n";
    y += "spec:\n";
    y += "  completionMode: Indexed\n";
    y += "  completions: " + std::to_string(job.shards) + "\n";
    y += "  parallelism: " + std::to_string(parallelism) + "\n";
    y += "  # A replay that fails once is tried once more; exit 1 (a divergence) is a success.\n";
    y += "  backoffLimitPerIndex: 1\n";
    y += "  template:\n";
    y += "    spec:\n";
    y += "      restartPolicy: Never\n";
    y += "      containers:\n";
    y += "        - name: replay\n";
    y += "          image: " + yamlString(job.image) + "\n";
    y += "          command: [\"sh\", \"-c\", " + yamlString(kubernetesEscaped(script)) + "]\n";
    if (job.device.rfind("cuda", 0) == 0) {
        y += "          resources:\n";
        y += "            limits:\n";
        y += "              nvidia.com/gpu: 1\n";
    }
    y += "          volumeMounts:\n";
    y += "            - name: audit-case\n";
    y += "              mountPath: " + yamlString(mount) + "\n";
    y += "      volumes:\n";
    y += "        - name: audit-case\n";
    y += "          persistentVolumeClaim:\n";
    y += "            claimName: " + yamlString(job.claim) + "\n";
    return y;
}

}  // namespace zkdv
