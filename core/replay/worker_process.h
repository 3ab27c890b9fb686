#pragma once
// One replay worker process seen from the parent: started with posix_spawn in its own
// process group, a socket for the protocol as its fd 3, its stdout and stderr on pipes the
// parent drains into the run's log. Non-blocking on the parent's side throughout.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zkdv/replay/kernel_profile.h"

namespace zkdv::worker {

class ForkServer;

// Starts `executable` (the replay worker) in a process group of its own with the given
// arguments before `--channel 3 --parent PID`, `channel` as its fd 3, `output` and `errors`
// as its stdout and stderr (-1: /dev/null), stdin /dev/null, nothing else of this process's.
// Its environment is this process's with `profile` applied. Returns its pid, or -1 with errno set.
pid_t spawnReplayWorker(const std::string& executable, const std::vector<std::string>& arguments, int output, int errors, int channel,
                        const KernelProfile& profile = {});

class WorkerProcess {
public:
    // Starts `executable` under `profile`, forked by its fork server for that profile when
    // it has one (fork_server.h), else spawned; throws Error naming it when that is impossible.
    explicit WorkerProcess(const std::string& executable, const KernelProfile& profile = {});
    ~WorkerProcess();  // kills and reaps the process when it still runs
    WorkerProcess(const WorkerProcess&) = delete;
    WorkerProcess& operator=(const WorkerProcess&) = delete;

    pid_t pid() const { return pid_; }
    const std::string& executable() const { return executable_; }
    int channel() const { return channel_; }
    int output() const { return output_; }  // the worker's stdout, -1 once it ended
    int errors() const { return errors_; }  // the worker's stderr, -1 once it ended

    // Queues bytes for the channel; flush() sends what the socket takes now.
    void send(const std::vector<std::uint8_t>& bytes);
    bool sending() const { return sent_ < outgoing_.size(); }
    // false when the channel is closed on the worker's side.
    bool flush();
    // Tells the worker that no more segments come.
    void finishSending();

    // Reads what is there from the worker's stdout (or stderr); closes the pipe at its end.
    std::string drainOutput() { return drain(output_); }
    std::string drainErrors() { return drain(errors_); }

    // Waits up to `seconds` for the process to end by itself; true when it did (reap() then
    // returns its own status, not SIGKILL).
    bool awaitExit(double seconds);
    // SIGKILL to the whole process group (the program may have started children).
    void kill();
    // Kills what is left of the process group, waits for the process and returns its status
    // as "exited with status 3" or "was killed by signal SIGKILL (Killed)"; "" for exit 0.
    std::string reap();
    // The signal that ended the process once reap() has returned; 0 when it exited.
    int terminatingSignal() const;

private:
    std::string drain(int& fd);

    std::string executable_;
    std::shared_ptr<ForkServer> server_;  // the worker's parent when it was forked
    pid_t pid_ = -1;
    int channel_ = -1, output_ = -1, errors_ = -1;
    std::vector<std::uint8_t> outgoing_;
    std::size_t sent_ = 0;
    bool reaped_ = false;
    int status_ = 0;   // once reaped_
    int waitError_ = 0;
};

// The worker executable: beside the running executable (the build tree), else where it is
// installed relative to it (lib/zkdv). Throws Error listing the places looked at.
std::string findReplayWorker();

}  // namespace zkdv::worker
