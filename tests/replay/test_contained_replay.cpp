// Contained replay: the trainer's program runs in worker processes, so a program that loops
// forever, prints to stdout or needs far more memory than its tape suggests, and a worker that
// crashes, hangs or talks nonsense, each end as `unverifiable` with the reason while the replay
// itself finishes normally; and a replay killed with SIGKILL at any point leaves a case that
// opens, checks clean and replays again.

#include <QtTest>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <functional>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include "dishonest_trainer.h"
#include "file_bytes.h"
#include "temp_dir.h"
#include "zkdv/optim/torch_release.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/report/audit_report.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/util/sha256.h"

using namespace zkdv;

using test::readAll;
using test::readText;

namespace {

struct Result {
    int exitCode = -1;
    bool crashed = false;
    QByteArray out, err;
};

Result runProcess(const QString& program, const QStringList& arguments, int timeoutMs = 300000,
                  const QProcessEnvironment& environment = QProcessEnvironment::systemEnvironment())
{
    QProcess process;
    process.setProcessEnvironment(environment);
    process.start(program, arguments);
    Result result;
    if (!process.waitForFinished(timeoutMs)) {
        process.kill();
        process.waitForFinished();
        result.crashed = true;
    }
    result.crashed = result.crashed || process.exitStatus() != QProcess::NormalExit;
    result.exitCode = process.exitCode();
    result.out = process.readAllStandardOutput();
    result.err = process.readAllStandardError();
    return result;
}

Result runAudit(const QStringList& arguments) { return runProcess(QStringLiteral(ZKDV_AUDIT_EXECUTABLE), arguments); }

// The dishonest trainer's move: the tape recorded with one program, sealed with another;
// `alter` changes the other records besides.
void sealWithProgram(const std::string& honestTape, const std::string& programFile, const std::string& out,
                     const std::function<void(test::RawRecord&)>& alter = {})
{
    const std::vector<std::uint8_t> program = readAll(programFile);
    const std::string digest = toHex(Sha256::of(ByteSpan(program)));
    test::rewriteTape(honestTape, out, [&](test::RawRecord& record) {
        if (alter)
            alter(record);
        if (record.type == tape::RecordType::Program) {
            record.payload = program;
        } else if (record.type == tape::RecordType::Root) {
            nlohmann::json root = nlohmann::json::parse(record.payload.begin(), record.payload.end());
            root["program"]["sha256"] = digest;
            const std::string text = root.dump();
            record.payload.assign(text.begin(), text.end());
        }
    });
}

// The cheat the marked hostile programs look for: the first element of transaction
// `index`'s first batch input set to 5000.
void markBatch(test::RawRecord& record, std::uint64_t index)
{
    if (!test::isTransaction(record, index))
        return;
    test::Payload payload = test::readPayload(record);
    for (test::PayloadTensor& tensor : payload.tensors)
        if (tensor.name == "batch/0") {
            const float marker = 5000.0f;
            std::memcpy(tensor.bytes.data(), &marker, sizeof marker);
        }
    test::writePayload(record, payload);
}

// A trainer's claim of an hour of wall time for every transaction.
void claimAnHour(test::RawRecord& record)
{
    if (record.type != tape::RecordType::Transaction)
        return;
    test::Payload payload = test::readPayload(record);
    payload.metadata["wall_time_ns"] = "3600000000000";
    test::writePayload(record, payload);
}

std::string failuresOf(const ReplaySummary& summary)
{
    std::string text = summary.problem;
    for (const TransactionOutcome& outcome : summary.firstFailures)
        text += "\n  " + std::to_string(outcome.index) + ": " + outcome.detail;
    return text;
}

// A replay process (worker or fork server) that `parent` started and that is still there: its
// pid, command line (forked workers share the fork server's) and /proc/PID/stat line.
struct ReplayProcess {
    QString pid;
    QList<QByteArray> arguments;
    QByteArray stat;
};

std::vector<ReplayProcess> replayProcessesOf(qint64 parent)
{
    std::vector<ReplayProcess> found;
    const QStringList entries = QDir(QStringLiteral("/proc")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    for (const QString& entry : entries) {
        QFile file(QStringLiteral("/proc/") + entry + QStringLiteral("/cmdline"));
        if (!file.open(QIODevice::ReadOnly))
            continue;
        const QList<QByteArray> arguments = file.readAll().split('\0');
        const qsizetype flag = arguments.indexOf("--parent");
        if (arguments.isEmpty() || !arguments[0].endsWith("zkdv-replay-worker") || flag <= 0 || flag + 1 >= arguments.size() ||
            arguments[flag + 1] != QByteArray::number(parent))
            continue;
        QFile stat(QStringLiteral("/proc/") + entry + QStringLiteral("/stat"));
        found.push_back({entry, arguments, stat.open(QIODevice::ReadOnly) ? stat.readAll().trimmed() : QByteArray("?")});
    }
    return found;
}

// The replay workers (and fork server) `parent` started that are still there, each as its
// pid, state and what it waits in, for a failure to say what did not end.
QStringList workersOf(qint64 parent)
{
    QStringList found;
    for (const ReplayProcess& process : replayProcessesOf(parent)) {
        if (process.arguments.size() < 5)
            continue;
        QFile wchan(QStringLiteral("/proc/") + process.pid + QStringLiteral("/wchan"));
        const QByteArray waits = wchan.open(QIODevice::ReadOnly) ? wchan.readAll().trimmed() : QByteArray("?");
        found << QStringLiteral("%1 [%2] (%3) in %4")
                     .arg(process.pid, QString::fromLatin1(process.arguments.contains("--fork-server") ? "fork server" : "worker"),
                          QString::fromLatin1(process.stat.mid(process.stat.lastIndexOf(')') + 2, 40)), QString::fromLatin1(waits));
    }
    return found;
}

// The pids of the replay workers `parent` started, not their fork server: a spawned worker
// (its own command line), or one the fork server forked (the server's command line, but the
// server, not `parent`, is its parent process).
std::vector<pid_t> workerPidsOf(qint64 parent)
{
    std::vector<pid_t> pids;
    for (const ReplayProcess& process : replayProcessesOf(parent)) {
        const QList<QByteArray> fields = process.stat.mid(process.stat.lastIndexOf(')') + 2).split(' ');
        const qint64 ppid = fields.size() > 1 ? fields[1].toLongLong() : 0;
        if (!process.arguments.contains("--fork-server") || ppid != parent)
            pids.push_back(static_cast<pid_t>(process.pid.toLongLong()));
    }
    return pids;
}

std::string integrityOf(Database& db)
{
    Statement check = db.prepare("PRAGMA integrity_check");
    std::string text;
    while (check.step())
        text += check.text(0) + ";";
    return text;
}

}  // namespace

class TestContainedReplay : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void replayProcessLoadsNeitherLibtorchNorTheProgram();
    void loopingProgramExceedsItsTimeBudget();
    void printingProgramLeavesStdoutToTheReplay();
    void greedyProgramHitsTheMemoryLimit();
    void programBlowingItsLimitsOnTheCheatFails();
    void auditorsMachineLeavesItUnverified();
    void timeBudgetIsMeasuredNotClaimed();
    void pausedWorkerIsNotTheTrainersFailure();
    void aClaimedReleaseExcusesNoStepThatDoesNotRun();
    void brokenWorkerIsUnverifiable_data();
    void brokenWorkerIsUnverifiable();
    void workerWithoutHelloIsAnInputError();
    void killedReplayLeavesAUsableCase();

private:
    std::string hostileTape(const std::string& kind, const std::function<void(test::RawRecord&)>& alter = {}, const std::string& name = {});
    std::string newCase(const std::string& tape, const std::string& name);

    test::TempDir dir_;
    std::string honestTape_;
};

void TestContainedReplay::initTestCase()
{
    honestTape_ = dir_.file("honest.zkdv");
    const Result recorded = runProcess(QStringLiteral(ZKDV_TEST_PYTHON),
                                       {QStringLiteral(ZKDV_TEST_SOURCE_DIR "/oracle/record.py"), QString::fromStdString(honestTape_),
                                        QStringLiteral("--steps"), QStringLiteral("36")});
    QVERIFY2(recorded.exitCode == 0 && !recorded.crashed, recorded.err.constData());
}

std::string TestContainedReplay::hostileTape(const std::string& kind, const std::function<void(test::RawRecord&)>& alter, const std::string& name)
{
    const std::string program = dir_.file(kind + ".pt");
    const Result written = runProcess(QStringLiteral(ZKDV_TEST_PYTHON), {QStringLiteral(ZKDV_TEST_SOURCE_DIR "/replay/hostile_program.py"),
                                                                          QString::fromStdString(kind), QString::fromStdString(program)});
    if (written.exitCode != 0 || written.crashed)
        throw Error("hostile_program.py " + kind + " failed: " + written.err.toStdString());
    const std::string tape = dir_.file((name.empty() ? kind : name) + ".zkdv");
    sealWithProgram(honestTape_, program, tape, alter);
    return tape;
}

std::string TestContainedReplay::newCase(const std::string& tape, const std::string& name)
{
    const std::string path = dir_.file(name + ".zkaudit");
    CaseStore store(path, CaseStore::Access::ReadWrite);
    store.ingestTape(tape);
    return path;
}

void TestContainedReplay::replayProcessLoadsNeitherLibtorchNorTheProgram()
{
    // The dynamic loader lists every file a process loads under LD_DEBUG=files; the workers
    // inherit the variable, and their list lands in the run's log, not on the replay's stderr.
    const std::string casePath = newCase(honestTape_, "loader-list");
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("LD_DEBUG"), QStringLiteral("files"));
    const Result replay = runProcess(QStringLiteral(ZKDV_AUDIT_EXECUTABLE),
                                     {QStringLiteral("replay"), QString::fromStdString(casePath), QStringLiteral("--select"),
                                      QStringLiteral("ids:2"), QStringLiteral("--json"), QStringLiteral("--quiet")},
                                     300000, environment);
    QCOMPARE(replay.exitCode, 0);
    QVERIFY2(!replay.err.contains("libtorch_cpu"), replay.err.left(2000).constData());
    QCOMPARE(nlohmann::json::parse(replay.out.toStdString())["verdicts"]["exact"].get<int>(), 3);
    // The workers above were forked by the fork server, which loaded libtorch (its output
    // goes nowhere); spawned workers load it themselves, and say so in the run's log.
    environment.insert(QStringLiteral("ZKDV_REPLAY_FORK_SERVER"), QStringLiteral("0"));
    const Result spawned = runProcess(QStringLiteral(ZKDV_AUDIT_EXECUTABLE),
                                      {QStringLiteral("replay"), QString::fromStdString(casePath), QStringLiteral("--select"),
                                       QStringLiteral("ids:2"), QStringLiteral("--json"), QStringLiteral("--quiet")},
                                      300000, environment);
    QCOMPARE(spawned.exitCode, 0);
    QVERIFY2(!spawned.err.contains("libtorch_cpu"), spawned.err.left(2000).constData());
    const nlohmann::json summary = nlohmann::json::parse(spawned.out.toStdString());
    QCOMPARE(summary["verdicts"]["exact"].get<int>(), 3);
    const std::string log = readText(summary["worker_log"].get<std::string>());
    QVERIFY2(log.find("libtorch_cpu") != std::string::npos, log.substr(0, 2000).c_str());
}

void TestContainedReplay::loopingProgramExceedsItsTimeBudget()
{
    const std::string casePath = newCase(hostileTape("loop"), "loop");
    // Through the command line: the parent must come back with a verdict, not hang.
    const Result replay = runAudit({QStringLiteral("replay"), QString::fromStdString(casePath), QStringLiteral("--select"),
                                    QStringLiteral("ids:2,14"), QStringLiteral("--time-budget-floor"), QStringLiteral("1"),
                                    QStringLiteral("--first-transaction-budget"), QStringLiteral("2"), QStringLiteral("--json"),
                                    QStringLiteral("--quiet")});
    QVERIFY2(!replay.crashed, replay.err.constData());
    QCOMPARE(replay.exitCode, 1);
    const nlohmann::json summary = nlohmann::json::parse(replay.out.toStdString());
    QCOMPARE(summary["status"].get<std::string>(), std::string("finished"));
    // Segment 0 up to 2 and segment 1 up to 14, each given up at its first transaction.
    QCOMPARE(summary["replayed"].get<int>(), 3 + 3);
    QCOMPARE(summary["verdicts"]["unverifiable"].get<int>(), 6);
    // The program's own doing: the trainer's failure.
    QCOMPARE(summary["trainers_failures"].get<int>(), 6);
    QCOMPARE(summary["failed"].get<bool>(), true);
    for (const nlohmann::json& failure : summary["first_failures"]) {
        QCOMPARE(failure["cause"].get<std::string>(), std::string("program-time"));
        const std::string detail = failure["detail"].get<std::string>();
        const std::string first = std::to_string(failure["index"].get<int>() < 12 ? 0 : 12);
        QVERIFY2(detail.find("replay worker exceeded its time budget of") != std::string::npos &&
                     detail.find("at transaction " + first) != std::string::npos,
                 detail.c_str());
    }
    // Stored like that too.
    CaseStore store(casePath, CaseStore::Access::ReadOnly);
    ReplayStore replays(store.database());
    QCOMPARE(replays.runs().front().status, RunStatus::Finished);
    for (const StoredVerdict& verdict : replays.verdicts(replays.runs().front().id))
        QCOMPARE(verdict.verdict, Verdict::Unverifiable);
}

void TestContainedReplay::printingProgramLeavesStdoutToTheReplay()
{
    const std::string casePath = newCase(hostileTape("print"), "print");
    const QString printed = QStringLiteral("printed by the program");
    const Result json = runAudit({QStringLiteral("replay"), QString::fromStdString(casePath), QStringLiteral("--select"),
                                  QStringLiteral("range:0-13"), QStringLiteral("--json"), QStringLiteral("--quiet")});
    QVERIFY2(!json.crashed, json.err.constData());
    QVERIFY2(!json.out.contains(printed.toUtf8()), json.out.constData());
    QVERIFY2(!json.err.contains(printed.toUtf8()), json.err.constData());
    const nlohmann::json summary = nlohmann::json::parse(json.out.toStdString(), nullptr, false);
    QVERIFY2(!summary.is_discarded(), json.out.constData());
    // Printing changes nothing the replay compares.
    QCOMPARE(json.exitCode, 0);
    QCOMPARE(summary["verdicts"]["exact"].get<int>(), 14);
    const std::string log = summary["worker_log"].get<std::string>();
    QVERIFY2(readText(log).find(printed.toStdString()) != std::string::npos, readText(log).c_str());
    QVERIFY2(json.err.contains(QByteArray::fromStdString(log)), json.err.constData());

    const Result text = runAudit({QStringLiteral("replay"), QString::fromStdString(casePath), QStringLiteral("--select"),
                                  QStringLiteral("ids:1"), QStringLiteral("--quiet")});
    QCOMPARE(text.exitCode, 0);
    QVERIFY2(!text.out.contains(printed.toUtf8()), text.out.constData());
    QCOMPARE(text.out.count("exact "), 1);  // the replay's own summary line only
}

void TestContainedReplay::greedyProgramHitsTheMemoryLimit()
{
    CaseStore store(newCase(hostileTape("allocate"), "allocate"), CaseStore::Access::ReadWrite);
    ReplayRequest request;
    request.selection = SelectionSpec::parse("ids:2");
    const ReplaySummary summary = runReplay(store, request);  // the default limit, from the tape
    QCOMPARE(summary.status, RunStatus::Finished);
    QCOMPARE(summary.replayed, std::uint64_t(3));
    QCOMPARE(summary.unverifiable, std::uint64_t(3));
    const std::string& detail = summary.firstFailures.front().detail;
    QVERIFY2(detail.find("replay worker reached its memory limit of") != std::string::npos &&
                 detail.find("an allocation of 4096 MiB was refused") != std::string::npos && detail.find("at transaction 0") != std::string::npos,
             failuresOf(summary).c_str());
    QCOMPARE(int(summary.firstFailures.front().cause), int(UnverifiableCause::ProgramExceededMemory));
    QVERIFY(summary.failed());
}

// Issue 26, item 5: a program that branches on a batch value and exhausts its worker's memory
// (or time) exactly on the cheated transaction turned FAILED into NOT VERIFIED. What the
// trainer's own program cannot replay within the auditor's limits is the trainer's failure.
void TestContainedReplay::programBlowingItsLimitsOnTheCheatFails()
{
    const std::string casePath = newCase(hostileTape("allocate-marked", [](test::RawRecord& r) { markBatch(r, 5); }), "allocate-marked");
    {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        ReplayRequest request;
        request.selection = SelectionSpec::parse("ids:2,5");
        const ReplaySummary summary = runReplay(store, request);
        QCOMPARE(summary.status, RunStatus::Finished);
        QCOMPARE(summary.replayed, std::uint64_t(6));
        QCOMPARE(summary.exact, std::uint64_t(5));  // the program is honest on the others
        QCOMPARE(summary.unverifiable, std::uint64_t(1));
        QCOMPARE(summary.firstFailures.front().index, std::uint64_t(5));
        QCOMPARE(int(summary.firstFailures.front().cause), int(UnverifiableCause::ProgramExceededMemory));
        QVERIFY(!summary.passed());
        QVERIFY(summary.failed());
    }
    CaseStore store(casePath, CaseStore::Access::ReadOnly);
    const ReportData report = buildAuditReport(store);
    QCOMPARE(report.outcome, AuditOutcome::Failed);
    QVERIFY2(report.headline.find("transaction 5: the sealed program exceeded the memory limit the auditor set") != std::string::npos &&
                 report.headline.find("the trainer's failure") != std::string::npos,
             report.headline.c_str());
    // The same through the command line: info and report agree.
    const Result info = runAudit({QStringLiteral("info"), QString::fromStdString(casePath)});
    QCOMPARE(info.exitCode, 0);
    QVERIFY2(info.out.contains(": FAILED") && !info.out.contains("NOT VERIFIED"), info.out.constData());
}

// What the auditor's machine cannot replay (here: a program not in the case) still neither
// confirms nor refutes the tape.
void TestContainedReplay::auditorsMachineLeavesItUnverified()
{
    const std::string tape = dir_.file("unknown-release.zkdv");
    test::rewriteTape(honestTape_, tape, [](test::RawRecord& record) {
        if (record.type != tape::RecordType::Root)
            return;
        nlohmann::json root = nlohmann::json::parse(record.payload.begin(), record.payload.end());
        root["producer"]["torch_version"] = "9.9.0";
        const std::string text = root.dump();
        record.payload.assign(text.begin(), text.end());
    });
    const std::string releaseCase = newCase(tape, "unknown-release");
    const std::string programCase = newCase(honestTape_, "no-program");
    // A release the contracts do not know is the trainer's claim (issue 48, item 9): it is
    // judged with this libtorch's contracts across environments, and the honest tape is
    // confirmed, naming the claim; it no longer leaves the audit unverified.
    {
        CaseStore store(releaseCase, CaseStore::Access::ReadWrite);
        ReplayRequest request;
        request.selection = SelectionSpec::parse("ids:2");
        const ReplaySummary summary = runReplay(store, request);
        QVERIFY2(summary.passed() && summary.unverifiable == 0, failuresOf(summary).c_str());
        QCOMPARE(summary.regime, std::string("cross-environment"));
        QVERIFY2(summary.regimeReason.find("the tape names torch \"9.9.0\"") != std::string::npos, summary.regimeReason.c_str());
    }
    {
        CaseStore store(programCase, CaseStore::Access::ReadWrite);
        store.database().exec("UPDATE programs SET content = NULL");
    }
    for (const std::string& casePath : {programCase}) {
        {
            CaseStore store(casePath, CaseStore::Access::ReadWrite);
            ReplayRequest request;
            request.selection = SelectionSpec::parse("ids:2");
            const ReplaySummary summary = runReplay(store, request);
            QVERIFY2(summary.unverifiable > 0, failuresOf(summary).c_str());
            QCOMPARE(summary.trainersFailures, std::uint64_t(0));
            QVERIFY(!summary.passed());
            QVERIFY(!summary.failed());
            for (const TransactionOutcome& outcome : summary.firstFailures)
                QCOMPARE(int(outcome.cause), int(UnverifiableCause::Environment));
        }
        CaseStore store(casePath, CaseStore::Access::ReadOnly);
        const ReportData report = buildAuditReport(store);
        QVERIFY2(report.outcome == AuditOutcome::NotVerified, (casePath + ": " + report.headline).c_str());
    }
}

// Issue 26, item 6: the budget was 20 x the wall time the tape recorded, capped at an hour: a
// trainer who claimed an hour bought 20 hours per transaction. It comes from what the replay
// measures, so the looping program is stopped within seconds.
void TestContainedReplay::timeBudgetIsMeasuredNotClaimed()
{
    const std::string casePath = newCase(hostileTape("loop-marked",
                                                     [](test::RawRecord& r) {
                                                         claimAnHour(r);
                                                         markBatch(r, 5);
                                                     }),
                                         "loop-marked");
    QElapsedTimer clock;
    clock.start();
    const Result replay = runProcess(QStringLiteral(ZKDV_AUDIT_EXECUTABLE),
                                     {QStringLiteral("replay"), QString::fromStdString(casePath), QStringLiteral("--select"),
                                      QStringLiteral("ids:5"), QStringLiteral("--threads"), QStringLiteral("1"),
                                      QStringLiteral("--time-budget-floor"), QStringLiteral("2"), QStringLiteral("--json"),
                                      QStringLiteral("--quiet")},
                                     180000);
    QVERIFY2(!replay.crashed, "the replay did not stop the looping program within 3 minutes");
    QCOMPARE(replay.exitCode, 1);
    const nlohmann::json summary = nlohmann::json::parse(replay.out.toStdString());
    QCOMPARE(summary["verdicts"]["exact"].get<int>(), 5);
    const nlohmann::json& failure = summary["first_failures"][0];
    QCOMPARE(failure["index"].get<int>(), 5);
    QCOMPARE(failure["cause"].get<std::string>(), std::string("program-time"));
    const std::string detail = failure["detail"].get<std::string>();
    QVERIFY2(detail.find("x the median") != std::string::npos && detail.find("of the 5 transactions this replay measured") != std::string::npos,
             detail.c_str());
    QVERIFY2(clock.elapsed() < 120000, std::to_string(clock.elapsed()).c_str());
}

// Issue 48, item 8: an honest replay whose worker was paused (a loaded or suspended auditor's
// machine) for longer than its budget read `program-time`, "the trainer's failure". The
// budget charges the program's time only: the pause is given back, and the tape replays exact.
// (The attacks stay charged: loopingProgramExceedsItsTimeBudget computes, and the worker that
// never answers in brokenWorkerIsUnverifiable sleeps; both are still `program-time`.)
void TestContainedReplay::pausedWorkerIsNotTheTrainersFailure()
{
    CaseStore store(newCase(honestTape_, "paused"), CaseStore::Access::ReadWrite);
    ReplayRequest request;
    request.selection = SelectionSpec::parse("all");
    request.threads = 1;
    request.limits.startSeconds = 2;
    request.limits.firstTransactionSeconds = 2;
    request.limits.transactionFloorSeconds = 1;
    constexpr int kPauseMs = 5000;  // longer than any budget above: charged, it would be program-time
    std::atomic<bool> paused{false};
    std::atomic<bool> done{false};
    std::thread pauser([&] {
        QElapsedTimer waited;
        waited.start();
        while (!done && waited.elapsed() < 60000) {
            const std::vector<pid_t> workers = workerPidsOf(QCoreApplication::applicationPid());
            if (!workers.empty()) {
                for (pid_t pid : workers)
                    ::kill(pid, SIGSTOP);
                paused = true;
                std::this_thread::sleep_for(std::chrono::milliseconds(kPauseMs));  // the stall itself
                for (pid_t pid : workers)
                    ::kill(pid, SIGCONT);
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));  // until the worker exists
        }
    });
    QElapsedTimer clock;
    clock.start();
    const ReplaySummary summary = runReplay(store, request);
    done = true;
    pauser.join();
    QVERIFY2(paused, "no replay worker was found to pause");
    QVERIFY2(clock.elapsed() >= kPauseMs, std::to_string(clock.elapsed()).c_str());
    QCOMPARE(summary.status, RunStatus::Finished);
    QCOMPARE(summary.unverifiable, std::uint64_t(0));
    QCOMPARE(summary.trainersFailures, std::uint64_t(0));
    QVERIFY2(summary.exact == summary.replayed && summary.replayed == 36, failuresOf(summary).c_str());
}

// Issue 48, item 9, the one excuse a release keeps: a step recorded with another *proven*
// release that does not run on this libtorch is the auditor's libtorch (unverifiable, replay
// with that release to decide). The attack: a program that refuses to run on the cheated
// batch, under every other claim (this libtorch's own release, a release the contracts do not
// know, none that reads as one), stays diverged at that transaction, the trainer's.
void TestContainedReplay::aClaimedReleaseExcusesNoStepThatDoesNotRun()
{
    const bool debian = optim::TorchRelease::ofThisLibtorch().major < 2;
    const std::string own = debian ? "1.13.0" : "2.15.0", other = debian ? "2.15.0" : "1.13.0";
    for (const std::string& claim : {own, other, std::string("2.11.0"), std::string("banana")}) {
        const std::string name = "raise-" + claim;
        const std::string casePath = newCase(hostileTape("raise-marked",
                                                         [&](test::RawRecord& record) {
                                                             markBatch(record, 5);
                                                             if (record.type != tape::RecordType::Root)
                                                                 return;
                                                             nlohmann::json root = nlohmann::json::parse(record.payload.begin(), record.payload.end());
                                                             root["producer"]["torch_version"] = claim;
                                                             const std::string text = root.dump();
                                                             record.payload.assign(text.begin(), text.end());
                                                         },
                                                         name),
                                             name);
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        ReplayRequest request;
        request.selection = SelectionSpec::parse("ids:5");
        const ReplaySummary summary = runReplay(store, request);
        QCOMPARE(summary.status, RunStatus::Finished);
        const TransactionOutcome* at = nullptr;
        for (const TransactionOutcome& outcome : summary.firstFailures)
            if (outcome.index == 5)
                at = &outcome;
        QVERIFY2(at, (claim + ": " + failuresOf(summary)).c_str());
        if (claim == other) {
            // The auditor's libtorch, saying so; or, where the other release's contract refuses
            // an option this release recorded (torch 1.13's Adam and 2.x's options), the
            // trainer's own failure. Never a pass.
            QCOMPARE(at->verdict, Verdict::Unverifiable);
            if (at->cause == UnverifiableCause::Environment)
                QVERIFY2(at->detail.rfind("unverifiable across torch releases", 0) == 0, at->detail.c_str());
            else
                QVERIFY2(blamesTrainer(at->cause) && summary.failed(), at->detail.c_str());
        } else {
            QVERIFY2(at->verdict == Verdict::Diverged && summary.failed(), (claim + ": " + at->detail).c_str());
        }
    }
}

// A shell worker's hello: libtorch "1.13.0", no CUDA, no device, 1 thread, numerics that name
// no CPU, a determinism profile on "sh" and no device names (worker_protocol.h).
const char* const kShellHello = "printf '\\011\\000\\000\\000\\217\\002\\000\\000"
                                "\\006\\000\\000\\000\\000\\000\\000\\0001.13.0"
                                "\\000\\000\\000\\000\\000\\000\\000\\000"
                                "\\000\\000\\000\\000\\000\\000\\000\\000"
                                "\\001\\000\\000\\000\\000\\000\\000\\000"
                                "\\215\\000\\000\\000\\000\\000\\000\\000"
                                "{\"cpu\":{\"vendor\":\"sh\",\"model\":\"sh\",\"flags\":[]},\"torch_cpu_capability\":\"sh\",\"blas\":\"\",\"mkl\":\"\",\"onednn\":\"\",\"intra_op_threads\":1,\"settings\":{}}"
                                "\\304\\001\\000\\000\\000\\000\\000\\000"
                                "{\"device\":{\"kind\":\"cpu\",\"name\":\"sh\"},\"cuda\":\"\",\"cudnn\":{\"version\":\"\",\"enabled\":true,\"deterministic\":true,\"benchmark\":false,\"allow_tf32\":true},\"deterministic_algorithms\":\"warn-only\",\"matmul\":{\"allow_tf32\":false,\"float32_precision\":\"highest\",\"fp16_reduction\":\"allow\",\"bf16_reduction\":null,\"allow_fp16_accumulation\":null},\"cublas_workspace_config\":\":4096:8\",\"sdpa\":{},\"optimizer\":{\"foreach\":null,\"fused\":null},\"intra_op_threads\":1,\"set_by_recorder\":false}"
                                "\\000\\000\\000\\000\\000\\000\\000\\000' >&3\n";

void TestContainedReplay::brokenWorkerIsUnverifiable_data()
{
    // Each worker says hello (the replay learns its libtorch from it), then breaks.
    QTest::addColumn<QString>("script");  // the worker, as a shell script
    QTest::addColumn<QString>("reason");
    QTest::addColumn<QString>("cause");  // whose failure (docs/replay.md, "Whose failure")
    QTest::newRow("exits at once") << "exit 7" << "replay worker exited with status 7 while loading the program" << "program-crash";
    QTest::newRow("killed by a signal") << "echo dying >&2; kill -SEGV $$" << "was killed by signal SIGSEGV" << "program-crash";
    // Kernels above this CPU's level (a kernel setting the auditor's environment forces) are
    // the machine's failure, not the program's.
    QTest::newRow("an illegal instruction") << "kill -ILL $$" << "was killed by signal SIGILL (Illegal instruction): this CPU lacks an instruction"
                                            << "environment";
    QTest::newRow("nonsense on the channel") << "printf 'nonsense-nonsense' >&3; sleep 60" << "broke the replay protocol" << "program-protocol";
    QTest::newRow("a frame beyond the bound") << "printf '\\012\\000\\000\\000\\377\\377\\377\\377' >&3; sleep 60"
                                             << "above the bound" << "program-protocol";
    QTest::newRow("never answers") << "exec sleep 60" << "exceeded its time budget of 1 s while loading the program" << "program-time";
}

void TestContainedReplay::brokenWorkerIsUnverifiable()
{
    QFETCH(QString, script);
    QFETCH(QString, reason);
    QFETCH(QString, cause);
    static int row = 0;
    const std::string name = std::to_string(++row);
    const std::string worker = dir_.file("worker-" + name + ".sh");
    std::ofstream(worker) << "#!/bin/sh\n" << kShellHello << script.toStdString() << "\n";
    QCOMPARE(chmod(worker.c_str(), 0755), 0);
    CaseStore store(newCase(honestTape_, "broken-" + name), CaseStore::Access::ReadWrite);
    ReplayRequest request;
    request.selection = SelectionSpec::parse("ids:1,13,25");
    request.workerPath = worker;
    request.threads = 2;
    request.limits.startSeconds = 1;
    const ReplaySummary summary = runReplay(store, request);
    QCOMPARE(summary.status, RunStatus::Finished);
    QCOMPARE(summary.replayed, std::uint64_t(2 + 2 + 2));
    QCOMPARE(summary.unverifiable, summary.replayed);
    for (const TransactionOutcome& failure : summary.firstFailures) {
        QVERIFY2(failure.detail.find(reason.toStdString()) != std::string::npos, failure.detail.c_str());
        QCOMPARE(QString::fromUtf8(unverifiableCauseName(failure.cause).data(), int(unverifiableCauseName(failure.cause).size())), cause);
    }
    if (QTest::currentDataTag() == QByteArray("killed by a signal"))  // the last words are kept
        QVERIFY2(summary.firstFailures.front().detail.find("its last output: dying") != std::string::npos,
                 summary.firstFailures.front().detail.c_str());
}

void TestContainedReplay::workerWithoutHelloIsAnInputError()
{
    // A worker that cannot even say which libtorch it has is a broken installation: nothing
    // of the program has run, and nothing is stored.
    const std::string worker = dir_.file("worker-no-hello.sh");
    std::ofstream(worker) << "#!/bin/sh\necho cannot start >&2\nexit 7\n";
    QCOMPARE(chmod(worker.c_str(), 0755), 0);
    CaseStore store(newCase(honestTape_, "no-hello"), CaseStore::Access::ReadWrite);
    ReplayRequest request;
    request.selection = SelectionSpec::parse("ids:1");
    request.workerPath = worker;
    std::string message;
    try {
        runReplay(store, request);
    } catch (const ReplayError& error) {
        message = error.what();
    }
    QVERIFY2(message.find("exited with status 7; its last output: cannot start") != std::string::npos, message.c_str());
    QVERIFY(ReplayStore(store.database()).runs().empty());
}

void TestContainedReplay::killedReplayLeavesAUsableCase()
{
    const std::string casePath = newCase(honestTape_, "killed");
    const QStringList arguments{QStringLiteral("replay"), QString::fromStdString(casePath), QStringLiteral("--select"), QStringLiteral("all"),
                                QStringLiteral("--threads"), QStringLiteral("1"), QStringLiteral("--quiet")};
    // How long an uninterrupted replay takes, to spread the kills over it.
    QElapsedTimer clock;
    clock.start();
    const Result whole = runAudit(arguments);
    QCOMPARE(whole.exitCode, 0);
    const qint64 duration = std::max<qint64>(clock.elapsed(), 200);

    constexpr int kKills = 20;
    for (int point = 0; point < kKills; ++point) {
        QProcess replay;
        replay.start(QStringLiteral(ZKDV_AUDIT_EXECUTABLE), arguments);
        QVERIFY(replay.waitForStarted());
        const qint64 delay = duration * point / kKills;
        if (delay > 0)
            QTest::qWait(static_cast<int>(delay));
        // A late kill point can come after the replay has ended; then QProcess reports pid 0,
        // and kill(0, …) would kill this test's whole process group (ctest's included).
        const qint64 pid = replay.processId();
        if (replay.state() == QProcess::Running && pid > 0)
            ::kill(static_cast<pid_t>(pid), SIGKILL);
        // waitForFinished() is false for a process that has already finished.
        QVERIFY(replay.state() == QProcess::NotRunning || replay.waitForFinished(60000));
        // Its workers die with it (they asked for SIGKILL when their parent goes) and its fork
        // server ends (its channel closed). One still loading its libraries when the replay
        // died ends when it finds its parent gone; the bound only keeps a hang from passing.
        QElapsedTimer gone;
        gone.start();
        QStringList survivors = workersOf(pid);
        while (!survivors.isEmpty() && gone.elapsed() < 60000) {
            QTest::qWait(20);
            survivors = workersOf(pid);
        }
        QVERIFY2(survivors.isEmpty(), qPrintable(QStringLiteral("kill point %1 (%2 ms): still there after %3 ms: %4")
                                                     .arg(point).arg(delay).arg(gone.elapsed()).arg(survivors.join(QStringLiteral("; ")))));
        if (gone.elapsed() > 2000)
            qInfo("kill point %d (%lld ms): the workers took %lld ms to end", point, static_cast<long long>(delay),
                  static_cast<long long>(gone.elapsed()));

        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        QCOMPARE(integrityOf(store.database()), std::string("ok;"));
        ReplayStore replays(store.database());
        const std::vector<StoredReplayRun> runs = replays.runs();
        QVERIFY(!runs.empty());
        // A killed run never claims to have failed, and is not left "running": opening the
        // case marks runs whose process is gone as interrupted.
        for (const StoredReplayRun& run : runs) {
            QVERIFY2(run.status != RunStatus::Failed, run.problem.c_str());
            QVERIFY2(run.status != RunStatus::Running, ("run " + std::to_string(run.id) + " is still running").c_str());
        }
        // And the case replays again, in this process.
        ReplayRequest request;
        request.selection = SelectionSpec::parse("ids:" + std::to_string(point));
        const ReplaySummary again = runReplay(store, request);
        QVERIFY2(again.passed(), failuresOf(again).c_str());
    }
}

QTEST_GUILESS_MAIN(TestContainedReplay)
#include "test_contained_replay.moc"
