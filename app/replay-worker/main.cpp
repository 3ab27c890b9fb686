// zkdv-replay-worker: the process a replay runs the trainer's program in, started by the
// replay (core/replay/worker_process.cpp) with its channel on fd 3; not for people to run.
// With --fork-server first it is the replay's fork server (core/include/zkdv/replay/fork_server.h), which
// forks the workers.

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include <sys/prctl.h>
#include <unistd.h>

#include "zkdv/worker/replay_worker.h"

int main(int argc, char** argv)
{
    const bool forkServer = argc == 6 && std::strcmp(argv[1], "--fork-server") == 0;
    char** arguments = forkServer ? argv + 1 : argv;
    if ((argc != 5 && !forkServer) || std::strcmp(arguments[1], "--channel") != 0 || std::strcmp(arguments[3], "--parent") != 0) {
        std::fprintf(stderr, "zkdv-replay-worker is started by zkdv-audit replay and the workstation, not by hand\n");
        return 2;
    }
    // Dies with the replay that started it, also when that one is killed: asked for before the
    // parent is checked, so a replay that dies in between is seen by one or the other. The fork
    // server instead ends when the replay closes its channel, which the kernel does however the
    // replay's process ends: no death signal, which follows the thread that started a process
    // rather than the process.
    if (!forkServer)
        prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != static_cast<pid_t>(std::strtol(arguments[4], nullptr, 10)))
        return 2;
    const int channel = std::atoi(arguments[2]);
    if (forkServer)
        _exit(zkdv::runReplayForkServer(channel));
    const int status = zkdv::runReplayWorker(channel);
    // What the program printed is flushed; libtorch's teardown is skipped (it takes the better
    // part of a second, and the replay waits for the worker to end).
    std::fflush(nullptr);
    std::cout.flush();
    _exit(status);
}
