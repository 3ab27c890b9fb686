#pragma once
// A zkdv-audit (or any) process started in the background with its output captured, for
// tests that race it against other processes or kill it at a chosen moment.

#include <chrono>
#include <string>
#include <sys/types.h>
#include <vector>

namespace zkdv::test {

class AuditProcess {
public:
    // Starts `program` with `arguments`; stdin is /dev/null, stdout and stderr are captured.
    AuditProcess(const std::string& program, const std::vector<std::string>& arguments);
    // Kills (SIGKILL) and reaps a process still running.
    ~AuditProcess();
    AuditProcess(const AuditProcess&) = delete;
    AuditProcess& operator=(const AuditProcess&) = delete;

    // Reads output until stderr holds `text` `times` times (true), or the process ends or
    // `timeout` passes (false). Progress lines make milestones: ("verifying ", 3) is the third.
    bool waitForStderr(const std::string& text, std::chrono::milliseconds timeout, int times = 1);
    // SIGKILL, as a crash or `kill -9` would, then reaps it.
    void kill();
    // Waits for the end (reading output meanwhile); the exit status, or -1 when it was
    // killed by a signal or is still running after `timeout`.
    int wait(std::chrono::milliseconds timeout);

    const std::string& out() const { return out_; }
    const std::string& err() const { return err_; }

private:
    // Reads what is available on both pipes, waiting up to `timeout` for something; false
    // once both are closed.
    bool pump(std::chrono::milliseconds timeout);
    void reap(int options);

    pid_t pid_ = -1;
    int outPipe_ = -1;
    int errPipe_ = -1;
    bool reaped_ = false;
    int status_ = 0;
    std::string out_;
    std::string err_;
};

// The zkdv-audit this build made (ZKDV_AUDIT_EXECUTABLE of the test).
std::string auditExecutable();

}  // namespace zkdv::test
