#include "zkdv/store/run_owner.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <sstream>

namespace zkdv {

namespace {

std::string firstLine(const std::string& path)
{
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

// The host name and the pid namespace: containers on one machine share its boot id but
// number their processes apart, so a pid means something only within the same namespace.
std::string hostName()
{
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0)
        return {};
    char space[64] = {};
    const ssize_t length = ::readlink("/proc/self/ns/pid", space, sizeof space - 1);
    return std::string(name) + (length > 0 ? "/" + std::string(space, static_cast<std::size_t>(length)) : std::string());
}

// Field 22 of /proc/PID/stat, after the command name (which may hold spaces and parentheses,
// hence from the last ')'); 0 when unknown.
std::int64_t startTimeOf(std::int64_t pid)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::size_t end = stat.rfind(')');
    if (end == std::string::npos)
        return 0;
    std::istringstream fields(stat.substr(end + 1));
    std::string field;
    for (int number = 3; number <= 22 && fields >> field; ++number)
        if (number == 22)
            return std::stoll(field);
    return 0;
}

}  // namespace

RunOwner RunOwner::current()
{
    RunOwner owner;
    owner.host = hostName();
    owner.bootId = firstLine("/proc/sys/kernel/random/boot_id");
    owner.pid = static_cast<std::int64_t>(::getpid());
    owner.startTime = startTimeOf(owner.pid);
    return owner;
}

bool RunOwner::isGone() const
{
    const RunOwner here = current();
    if (host.empty() || host != here.host)
        return false;
    if (!bootId.empty() && !here.bootId.empty() && bootId != here.bootId)
        return true;
    if (pid <= 0)
        return false;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
        return true;
    const std::int64_t started = startTimeOf(pid);
    return startTime != 0 && started != 0 && started != startTime;
}

std::string RunOwner::describe() const { return "pid " + std::to_string(pid) + " on " + (host.empty() ? "an unknown host" : host); }

}  // namespace zkdv
