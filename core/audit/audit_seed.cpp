#include "zkdv/audit/audit_seed.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "zkdv/util/error.h"

namespace zkdv {

std::string_view seedSourceName(SeedSource source)
{
    switch (source) {
    case SeedSource::Drawn: return "drawn";
    case SeedSource::Given: return "given";
    case SeedSource::Unknown: return "unknown";
    }
    return "unknown";
}

SeedSource seedSourceFromName(std::string_view name)
{
    if (name == "drawn")
        return SeedSource::Drawn;
    if (name == "given")
        return SeedSource::Given;
    return SeedSource::Unknown;
}

std::uint64_t drawAuditSeed()
{
    std::uint64_t seed = 0;
    unsigned char* bytes = reinterpret_cast<unsigned char*>(&seed);
    std::size_t filled = 0;
    int lastError = 0;
    while (filled < sizeof seed) {
        const ssize_t got = getrandom(bytes + filled, sizeof seed - filled, 0);
        if (got > 0) {
            filled += static_cast<std::size_t>(got);
            continue;
        }
        if (got < 0 && errno == EINTR)
            continue;
        lastError = errno;
        break;
    }
    if (filled == sizeof seed)
        return seed;
    // A kernel without getrandom (ENOSYS) or a seccomp filter that refuses it.
    std::ifstream urandom("/dev/urandom", std::ios::binary);
    if (urandom.read(reinterpret_cast<char*>(&seed), sizeof seed))
        return seed;
    throw Error(std::string("cannot draw an audit seed: getrandom failed (") + std::strerror(lastError) +
                ") and /dev/urandom cannot be read; pass --seed S with a seed the trainer cannot know");
}

}  // namespace zkdv
