#include "zkdv/audit/program_check.h"

namespace zkdv {

std::string_view programCheckName(ProgramCheck check)
{
    switch (check) {
    case ProgramCheck::Matched: return "matched";
    case ProgramCheck::Missing: return "missing";
    case ProgramCheck::Mismatched: return "mismatched";
    case ProgramCheck::NotReplayable: return "not-replayable";
    }
    return "matched";
}

std::optional<ProgramCheck> programCheckFromName(std::string_view name)
{
    for (ProgramCheck check : {ProgramCheck::Matched, ProgramCheck::Missing, ProgramCheck::Mismatched, ProgramCheck::NotReplayable})
        if (programCheckName(check) == name)
            return check;
    return std::nullopt;
}

}  // namespace zkdv
