// zkdv-replay-worker: the process a replay runs the trainer's program in, started by the
// replay (core/replay/worker_process.cpp) with its channel on fd 3; not for people to run.

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include <sys/prctl.h>
#include <unistd.h>

#include "zkdv/replay/replay_worker.h"

int main(int argc, char** argv)
{
    if (argc != 5 || std::strcmp(argv[1], "--channel") != 0 || std::strcmp(argv[3], "--parent") != 0) {
        std::fprintf(stderr, "zkdv-replay-worker is started by zkdv-audit replay and the workstation, not by hand\n");
        return 2;
    }
    // Dies with the replay that started it, also when that one is killed.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != static_cast<pid_t>(std::strtol(argv[4], nullptr, 10)))
        return 2;
    const int status = zkdv::runReplayWorker(std::atoi(argv[2]));
    // What the program printed is flushed; libtorch's teardown is skipped (it takes the better
    // part of a second, and the replay waits for the worker to end).
    std::fflush(nullptr);
    std::cout.flush();
    _exit(status);
}
