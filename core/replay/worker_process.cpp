#include "worker_process.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <optional>
#include <string>

#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zkdv/replay/fork_server.h"
#include "zkdv/util/error.h"

extern char** environ;

// Set by core/CMakeLists.txt: the worker's file name, and its install directory relative to
// the installed executables' directory.
#ifndef ZKDV_REPLAY_WORKER_NAME
#error "ZKDV_REPLAY_WORKER_NAME is not defined"
#endif
#ifndef ZKDV_REPLAY_WORKER_INSTALL_DIR
#error "ZKDV_REPLAY_WORKER_INSTALL_DIR is not defined"
#endif

namespace zkdv::worker {

namespace {

[[noreturn]] void fail(const std::string& what) { throw Error(what + ": " + std::strerror(errno)); }

void setNonBlocking(int fd)
{
    const int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
        fail("cannot make a replay worker's pipe non-blocking");
}

// Above the three standard streams and the channel, so the child's dup2s never collide.
int highFd(int fd)
{
    const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 10);
    if (moved < 0)
        fail("cannot duplicate a replay worker's descriptor");
    close(fd);
    return moved;
}

void closeFd(int& fd)
{
    if (fd >= 0)
        close(fd);
    fd = -1;
}

}  // namespace

pid_t spawnReplayWorker(const std::string& executable, const std::vector<std::string>& arguments, int output, int errors, int channel,
                        const KernelProfile& profile)
{
    const std::vector<std::string> variables = profile.environment(environ);
    std::vector<char*> envp;
    for (const std::string& variable : variables)
        envp.push_back(const_cast<char*>(variable.c_str()));
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (output >= 0)
        posix_spawn_file_actions_adddup2(&actions, output, 1);
    else
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    if (errors >= 0)
        posix_spawn_file_actions_adddup2(&actions, errors, 2);
    else
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, channel, 3);
    // Nothing else of the parent's (a case's database, the workstation's files) reaches it.
    posix_spawn_file_actions_addclosefrom_np(&actions, 4);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setpgroup(&attributes, 0);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    const std::string parent = std::to_string(getpid());
    std::vector<const char*> argv{executable.c_str()};
    for (const std::string& argument : arguments)
        argv.push_back(argument.c_str());
    for (const char* fixed : {"--channel", "3", "--parent"})
        argv.push_back(fixed);
    argv.push_back(parent.c_str());
    argv.push_back(nullptr);
    pid_t pid = -1;
    const int spawned = posix_spawn(&pid, executable.c_str(), &actions, &attributes, const_cast<char**>(argv.data()), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (spawned != 0) {
        errno = spawned;
        return -1;
    }
    return pid;
}

WorkerProcess::WorkerProcess(const std::string& executable, const KernelProfile& profile) : executable_(executable)
{
    int sockets[2], out[2], err[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0)
        fail("cannot create a replay worker's channel");
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
        fail("cannot create a replay worker's output pipes");
    const int childChannel = highFd(sockets[1]), childOut = highFd(out[1]), childErr = highFd(err[1]);
    channel_ = sockets[0];
    output_ = out[0];
    errors_ = err[0];

    if (std::shared_ptr<ForkServer> server = ForkServer::forExecutable(executable, profile)) {
        const pid_t forked = server->fork(childChannel, childOut, childErr);
        if (forked > 0) {
            pid_ = forked;
            server_ = std::move(server);
        }
    }
    if (!server_)
        pid_ = spawnReplayWorker(executable, {}, childOut, childErr, childChannel, profile);
    const int spawnErrno = errno;
    close(childChannel);
    close(childOut);
    close(childErr);
    if (pid_ <= 0) {
        pid_ = -1;
        closeFd(channel_);
        closeFd(output_);
        closeFd(errors_);
        errno = spawnErrno;
        fail("cannot start the replay worker " + executable);
    }
    setNonBlocking(channel_);
    setNonBlocking(output_);
    setNonBlocking(errors_);
}

WorkerProcess::~WorkerProcess()
{
    if (pid_ > 0 && !reaped_) {
        kill();
        reap();
    }
    closeFd(channel_);
    closeFd(output_);
    closeFd(errors_);
}

void WorkerProcess::send(const std::vector<std::uint8_t>& bytes)
{
    if (sent_ == outgoing_.size()) {
        outgoing_.clear();
        sent_ = 0;
    }
    outgoing_.insert(outgoing_.end(), bytes.begin(), bytes.end());
}

bool WorkerProcess::flush()
{
    while (sent_ < outgoing_.size()) {
        const ssize_t n = ::send(channel_, outgoing_.data() + sent_, outgoing_.size() - sent_, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        if (n <= 0)
            return false;
        sent_ += static_cast<std::size_t>(n);
    }
    return true;
}

void WorkerProcess::finishSending() { shutdown(channel_, SHUT_WR); }

std::string WorkerProcess::drain(int& fd)
{
    std::string text;
    char buffer[65536];
    while (fd >= 0) {
        const ssize_t n = read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) {
            closeFd(fd);
            break;
        }
        text.append(buffer, static_cast<std::size_t>(n));
        if (text.size() >= (1u << 20))
            break;  // the rest on the next call: one chatty worker does not starve the others
    }
    return text;
}

void WorkerProcess::kill()
{
    if (pid_ > 0 && !reaped_) {
        ::kill(-pid_, SIGKILL);
        ::kill(pid_, SIGKILL);
    }
}

bool WorkerProcess::awaitExit(double seconds)
{
    if (server_ && pid_ > 0 && !reaped_) {
        if (server_->exitStatus(pid_, seconds))
            return true;
        return server_->gone();  // reap() says it could not be waited for
    }
    for (int waited = 0; pid_ > 0 && !reaped_; ++waited) {
        // WNOWAIT leaves it a zombie: its process group cannot be reused before reap().
        siginfo_t info{};
        if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 && errno != EINTR)
            return true;  // reap() reports the error
        if (info.si_pid == pid_)
            return true;
        if (waited * 0.01 >= seconds)
            return false;
        usleep(10000);
    }
    return true;
}

std::string WorkerProcess::reap()
{
    if (pid_ <= 0)
        return {};
    if (!reaped_) {
        // Before waiting, while the group's id still belongs to it: whatever the program
        // started dies with it.
        ::kill(-pid_, SIGKILL);
        if (server_) {
            // Its parent is the fork server, which keeps it a zombie until released.
            const std::optional<int> status = server_->exitStatus(pid_, 30.0);
            status_ = status.value_or(0);
            waitError_ = status ? 0 : ECHILD;
            server_->release(pid_);
        } else {
            pid_t done;
            do
                done = waitpid(pid_, &status_, 0);
            while (done < 0 && errno == EINTR);
            waitError_ = done < 0 ? errno : 0;
        }
        reaped_ = true;
    }
    if (waitError_ != 0)
        return std::string("could not be waited for: ") + std::strerror(waitError_);
    if (WIFEXITED(status_))
        return WEXITSTATUS(status_) == 0 ? std::string() : "exited with status " + std::to_string(WEXITSTATUS(status_));
    if (WIFSIGNALED(status_)) {
        const char* name = sigabbrev_np(WTERMSIG(status_));
        return "was killed by signal " + (name ? "SIG" + std::string(name) : std::to_string(WTERMSIG(status_))) + " (" +
               strsignal(WTERMSIG(status_)) + ")";
    }
    return "ended with wait status " + std::to_string(status_);
}

int WorkerProcess::terminatingSignal() const { return reaped_ && waitError_ == 0 && WIFSIGNALED(status_) ? WTERMSIG(status_) : 0; }

std::string findReplayWorker()
{
    char path[PATH_MAX];
    const ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    if (length <= 0)
        fail("cannot locate the replay worker " ZKDV_REPLAY_WORKER_NAME ": reading /proc/self/exe failed");
    const std::string executable(path, static_cast<std::size_t>(length));
    const std::string directory = executable.substr(0, executable.find_last_of('/'));
    const std::string candidates[] = {directory + "/" ZKDV_REPLAY_WORKER_NAME,
                                      directory + "/" ZKDV_REPLAY_WORKER_INSTALL_DIR "/" ZKDV_REPLAY_WORKER_NAME};
    for (const std::string& candidate : candidates)
        if (access(candidate.c_str(), X_OK) == 0)
            return candidate;
    throw Error("the replay worker " ZKDV_REPLAY_WORKER_NAME " is not installed; looked for " + candidates[0] + " and " + candidates[1]);
}

}  // namespace zkdv::worker
