#pragma once
// The process that writes a replay run, as the case records it, so that a later open can tell
// a run whose process is gone (killed, crashed, the machine restarted) from one still running.

#include <cstdint>
#include <string>

namespace zkdv {

struct RunOwner {
    std::string host;     // gethostname() and the pid namespace ("box/pid:[4026531836]")
    std::string bootId;   // /proc/sys/kernel/random/boot_id: changes at every boot
    std::int64_t pid = 0;
    std::int64_t startTime = 0;  // the process's start, in clock ticks after boot (/proc/PID/stat)

    // This process.
    static RunOwner current();
    // True only when the process certainly runs no more: recorded on this host, and the host
    // has booted since, or the pid is gone, or it now belongs to a process started later.
    // A run written on another host (a case on a shared disk) is never called gone.
    bool isGone() const;
    // "pid 123 on host", for messages.
    std::string describe() const;
};

}  // namespace zkdv
