// core/workflow/cluster_job: the Slurm array script and the Kubernetes Indexed Job of a
// sharded replay. The scripts are run here, with stubs for zkdv-audit and sbatch that record
// what they were given, so a quoting mistake shows as a wrong argument, not as a pretty text.

#include <QtTest>

#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "temp_dir.h"
#include "zkdv/util/error.h"
#include "zkdv/workflow/cluster_job.h"

using namespace zkdv;

namespace {

// Records its working folder and arguments, NUL-separated, in $STUB_RECORDS/<its first
// argument>, and exits with $STUB_EXIT.
constexpr const char* kRecordingStub = R"(#!/bin/bash
printf '%s\0' "$PWD" "$@" > "$STUB_RECORDS/$1"
exit "${STUB_EXIT:-0}"
)";

// sbatch: records its arguments and the script it reads on stdin, and prints a job id.
constexpr const char* kSbatchStub = R"(#!/bin/bash
printf '%s\0' "$@" > "$STUB_RECORDS/sbatch-arguments"
cat > "$STUB_RECORDS/sbatch-script"
echo "Submitted batch job 43"
)";

struct Run {
    int exitCode = -1;
    QString output;
};

Run run(const QString& program, const QStringList& arguments, const QProcessEnvironment& environment = QProcessEnvironment::systemEnvironment())
{
    QProcess process;
    process.setProcessEnvironment(environment);
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.start(program, arguments);
    if (!process.waitForFinished(30000))
        return {};
    return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1, QString::fromUtf8(process.readAll())};
}

void writeFile(const std::string& path, const std::string& text, bool executable = false)
{
    std::ofstream(path, std::ios::binary) << text;
    if (executable)
        std::filesystem::permissions(path, std::filesystem::perms::owner_all, std::filesystem::perm_options::add);
}

std::string readText(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A record of the stubs: the working folder, then the arguments.
std::vector<std::string> readRecord(const std::string& path)
{
    const std::string text = readText(path);
    std::vector<std::string> fields;
    std::size_t start = 0;
    for (std::size_t end; (end = text.find('\0', start)) != std::string::npos; start = end + 1)
        fields.push_back(text.substr(start, end - start));
    return fields;
}

std::string replaceAll(std::string text, const std::string& from, const std::string& to)
{
    for (std::size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size())
        text.replace(at, from.size(), to);
    return text;
}

bool contains(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

}  // namespace

class TestClusterJob : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void theShardFolderAndNameFollowTheCaseAndPlan();
    void slurmScriptIsAnArrayWhoseFirstTaskSubmitsTheMerge();
    void slurmTaskReplaysItsShardWithEveryArgumentIntact();
    void slurmTaskPassesADivergenceAndFailsOnAnyOtherError();
    void slurmMergeJobNamesEveryShardInTheFolder();
    void unsafeValuesAreRefused();
    void kubernetesJobIsAnIndexedJobOnTheClaim();
    void kubernetesPodReplaysItsIndexWithEveryArgumentIntact();

private:
    ClusterJob job() const;
    QProcessEnvironment stubEnvironment(const std::string& taskId, int stubExit) const;

    test::TempDir dir_;
    // A space, a single quote, a double quote and a % in every path: each is special somewhere
    // (the shell, YAML, sbatch's #SBATCH parser, Slurm's file name patterns).
    std::string base_;
    std::string stub_;
    std::string records_;
};

void TestClusterJob::initTestCase()
{
    base_ = dir_.file("it's a \"100%\" audit");
    std::filesystem::create_directories(base_ + "/bin");
    stub_ = base_ + "/bin/zkdv-audit";
    writeFile(stub_, kRecordingStub, true);
    writeFile(base_ + "/bin/sbatch", kSbatchStub, true);
    records_ = dir_.file("records");
}

void TestClusterJob::init()
{
    std::filesystem::remove_all(records_);
    std::filesystem::create_directories(records_);
}

ClusterJob TestClusterJob::job() const
{
    ClusterJob job;
    job.auditExecutable = stub_;
    job.casePath = base_ + "/run $1.zkaudit";
    job.selection = "random:25";
    job.seed = 12345678901234567890ULL;
    job.shards = 3;
    job.tapeId = 2;
    job.device = "cuda:1";
    job.tolerance = "ulp=4,rel=1e-6";
    job.calibration = base_ + "/cal $1.json";
    job.plannedAuditId = 4;
    return job;
}

QProcessEnvironment TestClusterJob::stubEnvironment(const std::string& taskId, int stubExit) const
{
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert("PATH", QString::fromStdString(base_ + "/bin:") + environment.value("PATH"));
    environment.insert("STUB_RECORDS", QString::fromStdString(records_));
    environment.insert("STUB_EXIT", QString::number(stubExit));
    environment.insert("SLURM_ARRAY_TASK_ID", QString::fromStdString(taskId));
    environment.insert("SLURM_ARRAY_JOB_ID", "41");
    return environment;
}

void TestClusterJob::theShardFolderAndNameFollowTheCaseAndPlan()
{
    QCOMPARE(defaultShardFolder("/data/run.zkaudit", 7, 3), std::string("/data/run.shards-7-3"));
    QCOMPARE(defaultShardFolder("/data/run.case", 7, 3), std::string("/data/run.case.shards-7-3"));
    ClusterJob named = job();
    QCOMPARE(clusterJobName(named), std::string("zkdv-run-1-12345678901234567890"));
    named.casePath = "/x/" + std::string(80, 'A') + ".zkaudit";
    const std::string name = clusterJobName(named);
    QVERIFY2(name.size() <= 52, name.c_str());
    QVERIFY2(std::regex_match(name, std::regex("[a-z0-9]([-a-z0-9]*[a-z0-9])?")), name.c_str());
}

void TestClusterJob::slurmScriptIsAnArrayWhoseFirstTaskSubmitsTheMerge()
{
    ClusterJob sharded = job();
    sharded.partition = "gpu nodes";
    sharded.gres = "gpu:1";
    sharded.time = "02:00:00";
    const std::string script = slurmArrayScript(sharded);
    const std::string folder = defaultShardFolder(sharded.casePath, sharded.seed, sharded.shards);
    QVERIFY2(contains(script, "\n#SBATCH --array=0-2\n"), script.c_str());
    // sbatch's own parser reads these: double quotes, \" inside, %% for a plain %.
    const std::string outputFolder = replaceAll(replaceAll(folder, "%", "%%"), "\"", "\\\"");
    QVERIFY2(contains(script, "\n#SBATCH --output=\"" + outputFolder + "/shard-%a.out\"\n"), script.c_str());
    QVERIFY2(contains(script, "\n#SBATCH --partition=\"gpu nodes\"\n"), script.c_str());
    QVERIFY2(contains(script, "\n#SBATCH --gres=\"gpu:1\"\n"), script.c_str());
    QVERIFY2(contains(script, "\n#SBATCH --time=\"02:00:00\"\n"), script.c_str());
    QVERIFY2(contains(script, "\n#SBATCH --job-name=\"zkdv-run-1-12345678901234567890\"\n"), script.c_str());
    QVERIFY2(contains(script, "--shard \"$shard/3\""), script.c_str());
    QVERIFY2(contains(script, "--dependency=\"afterok:$SLURM_ARRAY_JOB_ID\" --kill-on-invalid-dep=yes"), script.c_str());
    // Every #SBATCH line comes before the first command: sbatch stops reading them there.
    const std::size_t lastDirective = script.rfind("\n#SBATCH");
    const std::size_t firstCommand = script.find("\nset -u\n");
    QVERIFY(lastDirective < firstCommand);

    const std::string file = dir_.file("array.sbatch");
    writeFile(file, script);
    const Run syntax = run("bash", {"-n", QString::fromStdString(file)});
    QVERIFY2(syntax.exitCode == 0, qPrintable(syntax.output));
}

void TestClusterJob::slurmTaskReplaysItsShardWithEveryArgumentIntact()
{
    const ClusterJob sharded = job();
    const std::string file = dir_.file("array.sbatch");
    writeFile(file, slurmArrayScript(sharded));
    const Run task = run("bash", {QString::fromStdString(file)}, stubEnvironment("2", 0));
    QVERIFY2(task.exitCode == 0, qPrintable(task.output));
    const std::string folder = defaultShardFolder(sharded.casePath, sharded.seed, sharded.shards);
    const std::vector<std::string> expected = {dir_.path(), "replay", sharded.casePath, "--select", "random:25", "--seed",
                                               "12345678901234567890", "--shard", "2/3", "--into", folder + "/shard-2.zkaudit",
                                               "--tape", "2", "--device", "cuda:1", "--tolerance", "ulp=4,rel=1e-6", "--calibration",
                                               base_ + "/cal $1.json", "--quiet", "--threads", "1"};
    std::vector<std::string> recorded = readRecord(records_ + "/replay");
    QVERIFY(!recorded.empty());
    recorded.front() = dir_.path();  // the working folder is the test's, not the script's business
    QCOMPARE(recorded, expected);
    // Only task 0 submits the merge.
    QVERIFY(!std::filesystem::exists(records_ + "/sbatch-arguments"));
}

void TestClusterJob::slurmTaskPassesADivergenceAndFailsOnAnyOtherError()
{
    const std::string file = dir_.file("array.sbatch");
    writeFile(file, slurmArrayScript(job()));
    // 1: a transaction diverged; its shard case holds the verdict and the merge must run.
    QCOMPARE(run("bash", {QString::fromStdString(file)}, stubEnvironment("1", 1)).exitCode, 0);
    QCOMPARE(run("bash", {QString::fromStdString(file)}, stubEnvironment("1", 2)).exitCode, 2);
    QCOMPARE(run("bash", {QString::fromStdString(file)}, stubEnvironment("1", 3)).exitCode, 3);
    QCOMPARE(run("bash", {QString::fromStdString(file)}, stubEnvironment("1", 0)).exitCode, 0);
}

void TestClusterJob::slurmMergeJobNamesEveryShardInTheFolder()
{
    const ClusterJob sharded = job();
    const std::string folder = defaultShardFolder(sharded.casePath, sharded.seed, sharded.shards);
    std::filesystem::create_directories(folder);
    const std::string file = dir_.file("array.sbatch");
    writeFile(file, slurmArrayScript(sharded));
    const Run task = run("bash", {QString::fromStdString(file)}, stubEnvironment("0", 0));
    QVERIFY2(task.exitCode == 0, qPrintable(task.output));
    QVERIFY(std::filesystem::exists(records_ + "/replay"));

    const std::vector<std::string> submitted = readRecord(records_ + "/sbatch-arguments");
    const std::vector<std::string> expectedSubmission = {"--dependency=afterok:41", "--kill-on-invalid-dep=yes",
                                                         "--job-name=zkdv-run-1-12345678901234567890-merge",
                                                         "--output=" + replaceAll(folder, "%", "%%") + "/merge.out"};
    QCOMPARE(submitted, expectedSubmission);

    // The merge job's script, as sbatch would run it.
    const Run merge = run("bash", {QString::fromStdString(records_ + "/sbatch-script")}, stubEnvironment("", 0));
    QVERIFY2(merge.exitCode == 0, qPrintable(merge.output));
    // Held to the audit recorded for this job, not to a later one.
    const std::vector<std::string> expected = {folder, "merge", sharded.casePath, "--plan", "4", "shard-0.zkaudit", "shard-1.zkaudit",
                                               "shard-2.zkaudit"};
    QCOMPARE(readRecord(records_ + "/merge"), expected);

    // A merge that fails fails its job.
    QCOMPARE(run("bash", {QString::fromStdString(records_ + "/sbatch-script")}, stubEnvironment("", 1)).exitCode, 1);
}

void TestClusterJob::unsafeValuesAreRefused()
{
    auto refused = [](const ClusterJob& bad, const char* reason) {
        for (int kind = 0; kind < 2; ++kind) {
            try {
                if (kind == 0)
                    slurmArrayScript(bad);
                else
                    kubernetesIndexedJob(bad);
                QFAIL(reason);
            } catch (const Error& error) {
                QVERIFY2(!std::string(error.what()).empty(), reason);
            }
        }
    };
    auto both = [this]() {
        ClusterJob ready = job();
        ready.image = "zkdv:1";
        ready.claim = "audit";
        return ready;
    };
    ClusterJob bad = both();
    bad.casePath = base_ + "/line\nbreak.zkaudit";
    refused(bad, "a newline in the case path");
    bad = both();
    bad.selection = std::string("random:5\0x", 10);
    refused(bad, "a NUL in the selection");
    bad = both();
    bad.casePath = "relative.zkaudit";
    refused(bad, "a relative case path");
    bad = both();
    bad.shards = 0;
    refused(bad, "no shards");
    bad = both();
    bad.calibration = "cal.json";
    refused(bad, "a relative calibration path");
    bad = both();
    bad.tolerance = "ulp=4\n--tolerance rel=1";
    refused(bad, "a newline in the tolerance");
    bad = job();
    bad.folder = base_ + "/back\\slash";
    QVERIFY_THROWS_EXCEPTION(Error, slurmArrayScript(bad));
    bad = job();
    QVERIFY_THROWS_EXCEPTION(Error, kubernetesIndexedJob(bad));  // no image, no claim
}

void TestClusterJob::kubernetesJobIsAnIndexedJobOnTheClaim()
{
    if (run("/usr/bin/python3", {"-c", "import yaml"}).exitCode != 0)
        QSKIP("/usr/bin/python3 has no yaml module (python3-yaml; packaging/install-deps.sh installs it)");
    ClusterJob sharded = job();
    sharded.shards = 20;
    sharded.image = "registry.example/zkdv:1 \"x\"";
    sharded.claim = "audit-cases";
    sharded.mountPath = "/mnt/it's";
    const std::string manifest = kubernetesIndexedJob(sharded);
    const std::string file = dir_.file("job.yaml");
    writeFile(file, manifest);
    const Run parsed = run("/usr/bin/python3", {"-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
                                                QString::fromStdString(file)});
    QVERIFY2(parsed.exitCode == 0, qPrintable(parsed.output + "\n" + QString::fromStdString(manifest)));
    const nlohmann::json document = nlohmann::json::parse(parsed.output.toStdString());
    QCOMPARE(document["apiVersion"].get<std::string>(), std::string("batch/v1"));
    QCOMPARE(document["kind"].get<std::string>(), std::string("Job"));
    QCOMPARE(document["metadata"]["name"].get<std::string>(), clusterJobName(sharded));
    const nlohmann::json& spec = document["spec"];
    QCOMPARE(spec["completionMode"].get<std::string>(), std::string("Indexed"));
    QCOMPARE(spec["completions"].get<int>(), 20);
    QCOMPARE(spec["parallelism"].get<int>(), 16);
    QCOMPARE(spec["backoffLimitPerIndex"].get<int>(), 1);
    const nlohmann::json& pod = spec["template"]["spec"];
    QCOMPARE(pod["restartPolicy"].get<std::string>(), std::string("Never"));
    QCOMPARE(pod["containers"].size(), std::size_t(1));
    const nlohmann::json& container = pod["containers"][0];
    QCOMPARE(container["image"].get<std::string>(), sharded.image);
    QCOMPARE(container["command"][0].get<std::string>(), std::string("sh"));
    QCOMPARE(container["command"][1].get<std::string>(), std::string("-c"));
    QVERIFY(contains(container["command"][2].get<std::string>(), "JOB_COMPLETION_INDEX"));
    QCOMPARE(container["resources"]["limits"]["nvidia.com/gpu"].get<int>(), 1);
    QCOMPARE(container["volumeMounts"][0]["mountPath"].get<std::string>(), sharded.mountPath);
    const std::string volume = container["volumeMounts"][0]["name"].get<std::string>();
    QCOMPARE(pod["volumes"][0]["name"].get<std::string>(), volume);
    QCOMPARE(pod["volumes"][0]["persistentVolumeClaim"]["claimName"].get<std::string>(), sharded.claim);
    // The opening comment says how to wait and merge.
    QVERIFY2(contains(manifest, "\n#   kubectl wait --for=condition=complete --timeout=-1s job/" + clusterJobName(sharded) + "\n"),
             manifest.c_str());
    QVERIFY2(contains(manifest, " merge '/mnt/it'\\''s/run $1.zkaudit' --plan 4 shard-{0..19}.zkaudit"), manifest.c_str());

    sharded.parallelism = 4;
    sharded.device.clear();
    const std::string cpu = kubernetesIndexedJob(sharded);
    QVERIFY(contains(cpu, "\n  parallelism: 4\n"));
    QVERIFY(!contains(cpu, "nvidia.com/gpu"));
}

void TestClusterJob::kubernetesPodReplaysItsIndexWithEveryArgumentIntact()
{
    if (run("/usr/bin/python3", {"-c", "import yaml"}).exitCode != 0)
        QSKIP("/usr/bin/python3 has no yaml module (python3-yaml; packaging/install-deps.sh installs it)");
    ClusterJob sharded = job();
    sharded.image = "zkdv:1";
    sharded.claim = "audit-cases";
    // The pod's mount is this test's folder, so the stub runs where the manifest says.
    sharded.mountPath = base_;
    sharded.shards = 5;
    const std::string file = dir_.file("job.yaml");
    writeFile(file, kubernetesIndexedJob(sharded));
    const Run parsed = run("/usr/bin/python3", {"-c", "import sys, yaml; sys.stdout.write(yaml.safe_load(open(sys.argv[1]))"
                                                      "['spec']['template']['spec']['containers'][0]['command'][2])",
                                                QString::fromStdString(file)});
    QVERIFY2(parsed.exitCode == 0, qPrintable(parsed.output));
    // Kubernetes reads $$ as $ (and would expand $(NAME)); the script has no other $ left.
    const std::string command = parsed.output.toStdString();
    QVERIFY2(!contains(replaceAll(command, "$$", ""), "$"), command.c_str());
    const std::string script = replaceAll(command, "$$", "$");

    QProcessEnvironment environment = stubEnvironment("", 1);
    environment.insert("JOB_COMPLETION_INDEX", "4");
    const Run pod = run("sh", {"-c", QString::fromStdString(script)}, environment);
    QCOMPARE(pod.exitCode, 0);  // a divergence is the pod's success
    std::vector<std::string> recorded = readRecord(records_ + "/replay");
    QVERIFY(!recorded.empty());
    recorded.erase(recorded.begin());
    const std::vector<std::string> expected = {"replay", base_ + "/run $1.zkaudit", "--select", "random:25", "--seed", "12345678901234567890",
                                               "--shard", "4/5", "--into", base_ + "/run $1.shards-12345678901234567890-5/shard-4.zkaudit",
                                               "--tape", "2", "--device", "cuda:1", "--tolerance", "ulp=4,rel=1e-6", "--calibration",
                                               base_ + "/cal $1.json", "--quiet"};
    QCOMPARE(recorded, expected);
    environment.insert("STUB_EXIT", "2");
    QCOMPARE(run("sh", {"-c", QString::fromStdString(script)}, environment).exitCode, 2);
}

QTEST_GUILESS_MAIN(TestClusterJob)
#include "test_cluster_job.moc"
