#pragma once
// The replay workers' fork server (docs/replay.md, "Containment"): one process of the worker
// executable that starts, initialises libtorch once and then forks a worker for each one a
// replay asks for, instead of every worker paying that initialisation (most of a second of
// CPU) itself. A forked worker is what a spawned one is: its own process group, its stdout,
// stderr and channel on the descriptors the parent made, the memory limit set when its job
// comes; only its parent is the fork server, which reports its exit status to the replay.
//
// The server forks only while it is single-threaded (libtorch starts no thread before it is
// used); otherwise, or when it cannot be started, or with ZKDV_REPLAY_FORK_SERVER=0 in the
// environment, workers are spawned one by one as before.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "zkdv/replay/kernel_profile.h"

namespace zkdv::worker {

// The exit status of a forked worker that could not put its descriptors in place.
constexpr int kForkedWorkerSetupFailed = 5;

class ForkServer {
public:
    // The running fork server of `executable` under `profile` (libraries read their kernel
    // settings as they initialise, so each profile has its own), started on first use
    // (waiting for it to be ready); nullptr when there is none to be had: then spawn the worker.
    static std::shared_ptr<ForkServer> forExecutable(const std::string& executable, const KernelProfile& profile = {});

    ~ForkServer();
    ForkServer(const ForkServer&) = delete;
    ForkServer& operator=(const ForkServer&) = delete;

    // Forks a worker whose channel, stdout and stderr are these descriptors (the caller
    // keeps and closes its copies). Returns its pid, or -1 when the server is gone.
    pid_t fork(int channel, int output, int errors);
    // The worker's wait status once it has ended, waiting up to `seconds`; nullopt while it
    // runs (or when the server is gone: `gone()`). The worker stays a zombie, its pid and
    // process group reserved, until release().
    std::optional<int> exitStatus(pid_t worker, double seconds);
    // Lets the server reap the ended worker.
    void release(pid_t worker);
    bool gone() const { return gone_; }

    // The server's side: announces itself on `control` and serves fork requests until the
    // replay closes it; each child runs `workerMain` with its channel on fd 3 and exits with
    // its result. Returns the server's exit status.
    static int serve(int control, const std::function<int()>& workerMain);

private:
    ForkServer(pid_t pid, int control) : pid_(pid), control_(control) {}
    static std::shared_ptr<ForkServer> start(const std::string& executable, const KernelProfile& profile);
    // Reads one message into the state below, waiting up to `milliseconds`; false on a
    // timeout or when the server is gone.
    bool receive(int milliseconds);

    pid_t pid_;
    int control_;
    bool gone_ = false;
    std::mutex mutex_;
    std::optional<pid_t> forked_;       // the answer to the fork request in flight
    std::map<pid_t, int> exitStatuses_; // ended workers not yet released
};

}  // namespace zkdv::worker
