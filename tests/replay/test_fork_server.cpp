// Tests for the replay workers' fork server (core/include/zkdv/replay/fork_server.h): workers are forked
// by one server process rather than spawned, each still in a process group of its own, and
// their exit statuses reach the replay as a spawned worker's would. The replays of
// test_contained_replay (crashes, timeouts, memory limits, kills) run through it too.
#include <QtTest>

#include <csignal>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <sys/socket.h>
#include <unistd.h>

#include "worker_process.h"
#include "zkdv/replay/fork_server.h"

using namespace zkdv::worker;

namespace {

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

// Fields 4 (ppid) and 5 (pgrp) of /proc/PID/stat; the name (field 2) may hold spaces.
std::pair<pid_t, pid_t> parentAndGroup(pid_t pid)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    const std::size_t close = text.rfind(')');
    if (close == std::string::npos)
        return {-1, -1};
    std::istringstream fields(text.substr(close + 2));
    char state;
    pid_t parent = -1, group = -1;
    fields >> state >> parent >> group;
    return {parent, group};
}

// Reads the worker's hello frame: it arrives once the worker is up.
bool helloArrives(WorkerProcess& worker)
{
    for (int i = 0; i < 600; ++i) {
        std::uint8_t header[8];
        const ssize_t n = recv(worker.channel(), header, sizeof header, MSG_PEEK);
        if (n == static_cast<ssize_t>(sizeof header))
            return true;
        usleep(50000);
    }
    return false;
}

class ForkServerSetting {
public:
    explicit ForkServerSetting(const char* value) { ::setenv("ZKDV_REPLAY_FORK_SERVER", value, 1); }
    ~ForkServerSetting() { ::unsetenv("ZKDV_REPLAY_FORK_SERVER"); }
};

}  // namespace

class TestForkServer : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void workersAreForkedInTheirOwnGroups();
    void exitStatusesReachTheReplay();
    void offMeansSpawned();
};

void TestForkServer::workersAreForkedInTheirOwnGroups()
{
    const std::string executable = findReplayWorker();
    WorkerProcess first(executable), second(executable);
    QVERIFY(helloArrives(first));
    QVERIFY(helloArrives(second));
    const auto [firstParent, firstGroup] = parentAndGroup(first.pid());
    const auto [secondParent, secondGroup] = parentAndGroup(second.pid());
    QVERIFY(firstParent > 0);
    QCOMPARE(firstParent, secondParent);  // the one fork server
    QVERIFY2(firstParent != getpid(), "the worker was spawned, not forked");
    QCOMPARE(parentAndGroup(firstParent).first, getpid());  // the server is this process's child
    QCOMPARE(firstGroup, first.pid());
    QCOMPARE(secondGroup, second.pid());
    QVERIFY(ForkServer::forExecutable(executable) != nullptr);
}

void TestForkServer::exitStatusesReachTheReplay()
{
    const std::string executable = findReplayWorker();
    {
        // A worker whose channel closes before its job ends with the protocol status.
        WorkerProcess worker(executable);
        QVERIFY(helloArrives(worker));
        worker.finishSending();
        QVERIFY(worker.awaitExit(30));
        const std::string status = worker.reap();
        QVERIFY2(contains(status, "exited with status 3"), status.c_str());
    }
    {
        WorkerProcess worker(executable);
        QVERIFY(helloArrives(worker));
        QVERIFY(!worker.awaitExit(0.2));  // still waiting for its job
        worker.kill();
        QVERIFY(worker.awaitExit(30));
        const std::string status = worker.reap();
        QVERIFY2(contains(status, "killed by signal SIGKILL"), status.c_str());
    }
    // The server keeps serving after its workers ended.
    WorkerProcess again(executable);
    QVERIFY(helloArrives(again));
    QVERIFY(parentAndGroup(again.pid()).first != getpid());
}

void TestForkServer::offMeansSpawned()
{
    ForkServerSetting off("0");
    QVERIFY(ForkServer::forExecutable(findReplayWorker()) == nullptr);
    WorkerProcess worker(findReplayWorker());
    QVERIFY(helloArrives(worker));
    QCOMPARE(parentAndGroup(worker.pid()).first, getpid());
    worker.kill();
    const std::string status = worker.reap();
    QVERIFY2(contains(status, "killed by signal SIGKILL"), status.c_str());
}

QTEST_GUILESS_MAIN(TestForkServer)
#include "test_fork_server.moc"
