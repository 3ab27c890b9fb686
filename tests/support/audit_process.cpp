#include "audit_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>

namespace zkdv::test {

namespace {

using Clock = std::chrono::steady_clock;

void closeIfOpen(int& fd)
{
    if (fd >= 0)
        ::close(fd);
    fd = -1;
}

}  // namespace

AuditProcess::AuditProcess(const std::string& program, const std::vector<std::string>& arguments)
{
    int out[2];
    int err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
        throw std::runtime_error("cannot create pipes for " + program);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(program.c_str()));
    for (const std::string& argument : arguments)
        argv.push_back(const_cast<char*>(argument.c_str()));
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ < 0)
        throw std::runtime_error("cannot fork for " + program);
    if (pid_ == 0) {
        const int null = ::open("/dev/null", O_RDONLY);
        ::dup2(null, STDIN_FILENO);
        ::dup2(out[1], STDOUT_FILENO);
        ::dup2(err[1], STDERR_FILENO);
        ::execv(program.c_str(), argv.data());
        ::_exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    outPipe_ = out[0];
    errPipe_ = err[0];
}

AuditProcess::~AuditProcess()
{
    if (!reaped_)
        kill();
    closeIfOpen(outPipe_);
    closeIfOpen(errPipe_);
}

bool AuditProcess::pump(std::chrono::milliseconds timeout)
{
    pollfd fds[2] = {{outPipe_, POLLIN, 0}, {errPipe_, POLLIN, 0}};
    if (outPipe_ < 0 && errPipe_ < 0)
        return false;
    if (::poll(fds, 2, static_cast<int>(timeout.count())) <= 0)
        return true;
    char buffer[4096];
    std::string* into[2] = {&out_, &err_};
    int* pipes[2] = {&outPipe_, &errPipe_};
    for (int i = 0; i < 2; ++i) {
        if (*pipes[i] < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        const ssize_t got = ::read(*pipes[i], buffer, sizeof buffer);
        if (got > 0)
            into[i]->append(buffer, static_cast<std::size_t>(got));
        else
            closeIfOpen(*pipes[i]);
    }
    return outPipe_ >= 0 || errPipe_ >= 0;
}

bool AuditProcess::waitForStderr(const std::string& text, std::chrono::milliseconds timeout, int times)
{
    const auto seen = [&] {
        int found = 0;
        for (std::size_t at = err_.find(text); at != std::string::npos && found < times; at = err_.find(text, at + text.size()))
            ++found;
        return found >= times;
    };
    const auto deadline = Clock::now() + timeout;
    while (!seen()) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0 || !pump(std::min(left, std::chrono::milliseconds(20))))
            return seen();
    }
    return true;
}

void AuditProcess::reap(int options)
{
    if (reaped_ || pid_ <= 0)
        return;
    if (::waitpid(pid_, &status_, options) == pid_)
        reaped_ = true;
}

void AuditProcess::kill()
{
    if (reaped_ || pid_ <= 0)
        return;
    ::kill(pid_, SIGKILL);
    reap(0);
}

int AuditProcess::wait(std::chrono::milliseconds timeout)
{
    const auto deadline = Clock::now() + timeout;
    while (!reaped_) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0)
            return -1;
        if (!pump(std::min(left, std::chrono::milliseconds(50))))
            reap(0);  // both pipes closed: the process is ending
        else
            reap(WNOHANG);
    }
    while (pump(std::chrono::milliseconds(0))) {
    }
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
}

std::string auditExecutable()
{
#ifdef ZKDV_AUDIT_EXECUTABLE
    return ZKDV_AUDIT_EXECUTABLE;
#else
    return "zkdv-audit";
#endif
}

}  // namespace zkdv::test
