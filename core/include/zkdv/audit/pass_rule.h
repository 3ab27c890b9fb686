#pragma once
// When a replay run passes: the one rule a replay's summary (zkdv-audit replay's exit status)
// and a stored run (zkdv-audit info) are judged by.

#include <cstdint>
#include <string_view>

namespace zkdv {

// The run finished and no transaction it replayed diverged or was unverifiable. (The report's
// conclusion asks more, of the tape rather than the run: that something was replayed and
// that the tape is sealed.)
inline bool replayRunPassed(std::string_view status, std::uint64_t diverged, std::uint64_t unverifiable)
{
    return status == "finished" && diverged == 0 && unverifiable == 0;
}

}  // namespace zkdv
