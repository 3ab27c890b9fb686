#pragma once
// What a replay found when it checked the tape's sealed program before running anything, as
// the case stores it with the run and the report, CLI and workstation show it. A closed set:
// nothing downstream reads the run's problem text to find out.

#include <optional>
#include <string_view>

namespace zkdv {

enum class ProgramCheck {
    Matched,        // the program's SHA-256 is the one the tape commits to: it ran
    Missing,        // the case holds no program with that SHA-256, and none was given
    Mismatched,     // a program was given whose SHA-256 differs: it was refused, never run
    NotReplayable,  // the tape's program kind cannot be re-executed (e.g. "python-source")
};

// "matched", "missing", "mismatched", "not-replayable": as the case, JSON and reports spell them.
std::string_view programCheckName(ProgramCheck check);
std::optional<ProgramCheck> programCheckFromName(std::string_view name);

}  // namespace zkdv
