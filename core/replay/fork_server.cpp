#include "zkdv/replay/fork_server.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker_process.h"

namespace zkdv::worker {

namespace {

// Every message is 12 bytes: a type, a pid and a value (little-endian on one machine, so
// host order). A fork request carries the worker's three descriptors as SCM_RIGHTS.
enum : std::int32_t {
    kReady = 'Z',     // server -> replay: forking from here on
    kRefused = 'N',   // server -> replay: it cannot fork safely (several threads)
    kFork = 'F',      // replay -> server: fork a worker on these descriptors
    kForked = 'P',    // server -> replay: its pid, or -errno
    kExited = 'X',    // server -> replay: a worker ended; value: its wait status
    kRelease = 'R',   // replay -> server: reap that worker
};

struct Message {
    std::int32_t type = 0;
    std::int32_t pid = 0;
    std::int32_t value = 0;
};

bool sendMessage(int socket, const Message& message, const int* fds = nullptr, int fdCount = 0)
{
    iovec data{const_cast<Message*>(&message), sizeof message};
    msghdr header{};
    header.msg_iov = &data;
    header.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))] = {};
    if (fdCount > 0) {
        header.msg_control = control;
        header.msg_controllen = CMSG_SPACE(static_cast<std::size_t>(fdCount) * sizeof(int));
        cmsghdr* rights = CMSG_FIRSTHDR(&header);
        rights->cmsg_level = SOL_SOCKET;
        rights->cmsg_type = SCM_RIGHTS;
        rights->cmsg_len = CMSG_LEN(static_cast<std::size_t>(fdCount) * sizeof(int));
        std::memcpy(CMSG_DATA(rights), fds, static_cast<std::size_t>(fdCount) * sizeof(int));
    }
    ssize_t sent;
    do
        sent = sendmsg(socket, &header, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    return sent == static_cast<ssize_t>(sizeof message);
}

// 1 message read (descriptors in `fds`), 0 at the other side's end, -1 on an error.
int receiveMessage(int socket, Message& message, std::vector<int>* fds = nullptr)
{
    iovec data{&message, sizeof message};
    msghdr header{};
    header.msg_iov = &data;
    header.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(8 * sizeof(int))] = {};
    header.msg_control = control;
    header.msg_controllen = sizeof control;
    ssize_t got;
    do
        got = recvmsg(socket, &header, MSG_CMSG_CLOEXEC);
    while (got < 0 && errno == EINTR);
    for (cmsghdr* c = CMSG_FIRSTHDR(&header); c; c = CMSG_NXTHDR(&header, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count; ++i) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (fds)
                fds->push_back(fd);
            else
                close(fd);
        }
    }
    if (got == 0)
        return 0;
    if (got != static_cast<ssize_t>(sizeof message) || (header.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
        return -1;
    return 1;
}

bool waitReadable(int fd, int milliseconds)
{
    pollfd p{fd, POLLIN, 0};
    int ready;
    do
        ready = poll(&p, 1, milliseconds);
    while (ready < 0 && errno == EINTR);
    return ready > 0;
}

std::size_t threadCount()
{
    std::error_code error;
    std::size_t count = 0;
    for (auto it = std::filesystem::directory_iterator("/proc/self/task", error); !error && it != std::filesystem::directory_iterator();
         it.increment(error))
        ++count;
    return error ? 0 : count;
}

[[noreturn]] void becomeWorker(int control, pid_t server, const std::vector<int>& fds, const std::function<int()>& workerMain)
{
    close(control);
    const int input = open("/dev/null", O_RDONLY | O_CLOEXEC);
    // The received descriptors are above 3 (0-3 were taken when they arrived).
    if (input < 0 || dup2(input, 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[2], 2) < 0 || dup2(fds[0], 3) < 0)
        _exit(kForkedWorkerSetupFailed);
    closefrom(4);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // A server that ended before the death signal was asked for sent none.
    if (getppid() != server)
        _exit(kForkedWorkerSetupFailed);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    const int status = workerMain();
    std::fflush(nullptr);
    _exit(status);
}

}  // namespace

int ForkServer::serve(int control, const std::function<int()>& workerMain)
{
    if (threadCount() != 1) {
        sendMessage(control, Message{kRefused, 0, 0});
        return 0;
    }
    if (!sendMessage(control, Message{kReady, getpid(), 0}))
        return 0;
    std::map<pid_t, bool> children;  // pid -> its end reported
    for (;;) {
        const bool running = std::any_of(children.begin(), children.end(), [](const auto& child) { return !child.second; });
        if (waitReadable(control, running ? 20 : 1000)) {
            Message message;
            std::vector<int> fds;
            const int got = receiveMessage(control, message, &fds);
            if (got <= 0) {
                for (int fd : fds)
                    close(fd);
                break;  // the replay ended (or broke the channel): its workers go with it
            }
            if (message.type == kFork && fds.size() == 3) {
                const pid_t server = getpid();
                const pid_t pid = ::fork();
                if (pid == 0)
                    becomeWorker(control, server, fds, workerMain);
                const int forkErrno = errno;
                for (int fd : fds)
                    close(fd);
                if (pid > 0)
                    children[pid] = false;
                if (!sendMessage(control, Message{kForked, pid > 0 ? pid : -forkErrno, 0}))
                    break;
            } else if (message.type == kRelease && children.count(message.pid)) {
                while (waitpid(message.pid, nullptr, 0) < 0 && errno == EINTR) {
                }
                children.erase(message.pid);
            } else {
                for (int fd : fds)
                    close(fd);
                if (message.type == kFork && !sendMessage(control, Message{kForked, -EINVAL, 0}))
                    break;
            }
        }
        for (auto& [pid, reported] : children) {
            if (reported)
                continue;
            siginfo_t info{};
            if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != pid)
                continue;
            const int status = info.si_code == CLD_EXITED ? W_EXITCODE(info.si_status, 0)
                                                           : W_EXITCODE(0, info.si_status) | (info.si_code == CLD_DUMPED ? 0x80 : 0);
            reported = true;
            if (!sendMessage(control, Message{kExited, pid, status}))
                break;
        }
    }
    for (const auto& [pid, reported] : children) {
        ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);
        while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
    return 0;
}

std::shared_ptr<ForkServer> ForkServer::start(const std::string& executable, const KernelProfile& profile)
{
    int sockets[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sockets) != 0)
        return nullptr;
    const pid_t pid = spawnReplayWorker(executable, {"--fork-server"}, -1, -1, sockets[1], profile);
    close(sockets[1]);
    if (pid <= 0) {
        close(sockets[0]);
        return nullptr;
    }
    std::shared_ptr<ForkServer> server(new ForkServer(pid, sockets[0]));
    // Most of a second of libtorch initialisation; a server that does not come up within a
    // minute is not worth waiting for (the spawned workers say what is wrong).
    Message message;
    if (!waitReadable(sockets[0], 60000) || receiveMessage(sockets[0], message) != 1 || message.type != kReady) {
        server->gone_ = true;
        return nullptr;  // the destructor ends it
    }
    return server;
}

std::shared_ptr<ForkServer> ForkServer::forExecutable(const std::string& executable, const KernelProfile& profile)
{
    if (const char* setting = std::getenv("ZKDV_REPLAY_FORK_SERVER"); setting && std::string(setting) == "0")
        return nullptr;
    static std::mutex mutex;
    static std::map<std::string, std::shared_ptr<ForkServer>> servers;
    static std::map<std::string, bool> failed;
    std::lock_guard<std::mutex> lock(mutex);
    const std::string key = executable + '\n' + profile.key();
    if (failed[key])
        return nullptr;
    std::shared_ptr<ForkServer>& server = servers[key];
    if (server && server->gone())
        server.reset();
    if (!server) {
        server = start(executable, profile);
        if (!server)
            failed[key] = true;
    }
    return server;
}

ForkServer::~ForkServer()
{
    close(control_);  // the server kills the workers it still has and ends
    for (int waited = 0; waited < 200; ++waited) {
        const pid_t done = waitpid(pid_, nullptr, WNOHANG);
        if (done == pid_ || (done < 0 && errno != EINTR))
            return;
        usleep(5000);
    }
    ::kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
}

bool ForkServer::receive(int milliseconds)
{
    if (gone_)
        return false;
    if (!waitReadable(control_, milliseconds))
        return false;
    Message message;
    if (receiveMessage(control_, message) != 1) {
        gone_ = true;
        return false;
    }
    if (message.type == kForked)
        forked_ = message.pid;
    else if (message.type == kExited)
        exitStatuses_[message.pid] = message.value;
    return true;
}

pid_t ForkServer::fork(int channel, int output, int errors)
{
    std::lock_guard<std::mutex> lock(mutex_);
    const int fds[3] = {channel, output, errors};
    forked_.reset();
    if (gone_ || !sendMessage(control_, Message{kFork, 0, 0}, fds, 3)) {
        gone_ = true;
        return -1;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!forked_ && std::chrono::steady_clock::now() < deadline)
        if (!receive(100) && gone_)
            return -1;
    if (!forked_ || *forked_ <= 0) {
        if (!forked_)
            gone_ = true;  // a server that does not answer is of no use
        return -1;
    }
    return *forked_;
}

std::optional<int> ForkServer::exitStatus(pid_t worker, double seconds)
{
    std::lock_guard<std::mutex> lock(mutex_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
        if (auto it = exitStatuses_.find(worker); it != exitStatuses_.end())
            return it->second;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        if (gone_ || left < 0)
            return std::nullopt;
        receive(static_cast<int>(std::min<long long>(left, 100)));
    }
}

void ForkServer::release(pid_t worker)
{
    std::lock_guard<std::mutex> lock(mutex_);
    exitStatuses_.erase(worker);
    if (!gone_ && !sendMessage(control_, Message{kRelease, worker, 0}))
        gone_ = true;
}

}  // namespace zkdv::worker
