#pragma once
// The seed of an audit's random selection, and who chose it. A confidence bound from a random
// sample holds only if the trainer could not know which transactions would be replayed, so
// the default seed is drawn from the operating system when the audit starts (docs/replay.md,
// "The seed"), and a run records whether its seed was drawn or given by the auditor.

#include <cstdint>
#include <string_view>

namespace zkdv {

enum class SeedSource {
    Drawn,    // drawn from the operating system at audit time: nobody knew it before
    Given,    // chosen by the auditor (--seed, or edited in the workstation's dialog)
    Unknown,  // a run stored before case schema 9, which did not record it
};

// "drawn", "given", "unknown": as the case, the JSON outputs and the reports spell them.
std::string_view seedSourceName(SeedSource source);
// The source a stored name stands for; Unknown for anything else (NULL in an older case).
SeedSource seedSourceFromName(std::string_view name);

// 64 bits from the operating system's random source (getrandom, else /dev/urandom). Throws
// Error when neither can be read: an audit must not fall back to a seed someone could guess.
std::uint64_t drawAuditSeed();

}  // namespace zkdv
