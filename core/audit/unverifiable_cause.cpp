#include "zkdv/audit/unverifiable_cause.h"

namespace zkdv {

namespace {

constexpr UnverifiableCause kNamed[] = {
    UnverifiableCause::Environment,         UnverifiableCause::ProgramExceededTime,  UnverifiableCause::ProgramExceededMemory,
    UnverifiableCause::ProgramCrashed,      UnverifiableCause::ProgramBrokeProtocol, UnverifiableCause::ProgramRefused,
    UnverifiableCause::TapeMalformed,
};

}  // namespace

std::string_view unverifiableCauseName(UnverifiableCause cause)
{
    switch (cause) {
    case UnverifiableCause::None: return "";
    case UnverifiableCause::Environment: return "environment";
    case UnverifiableCause::ProgramExceededTime: return "program-time";
    case UnverifiableCause::ProgramExceededMemory: return "program-memory";
    case UnverifiableCause::ProgramCrashed: return "program-crash";
    case UnverifiableCause::ProgramBrokeProtocol: return "program-protocol";
    case UnverifiableCause::ProgramRefused: return "program-refused";
    case UnverifiableCause::TapeMalformed: return "tape-malformed";
    }
    return "environment";
}

std::optional<UnverifiableCause> unverifiableCauseFromName(std::string_view name)
{
    for (UnverifiableCause cause : kNamed)
        if (unverifiableCauseName(cause) == name)
            return cause;
    return std::nullopt;
}

std::string_view unverifiableCauseText(UnverifiableCause cause)
{
    switch (cause) {
    case UnverifiableCause::None: return "it was replayed";
    case UnverifiableCause::Environment: return "the auditor's machine could not replay it";
    case UnverifiableCause::ProgramExceededTime: return "the sealed program exceeded the time budget the auditor set";
    case UnverifiableCause::ProgramExceededMemory: return "the sealed program exceeded the memory limit the auditor set";
    case UnverifiableCause::ProgramCrashed: return "the replay worker running the sealed program died";
    case UnverifiableCause::ProgramBrokeProtocol: return "the replay worker running the sealed program broke the replay protocol";
    case UnverifiableCause::ProgramRefused: return "the sealed program cannot be loaded or fails the program checks";
    case UnverifiableCause::TapeMalformed: return "the tape's own records cannot be replayed";
    }
    return "the auditor's machine could not replay it";
}

std::string_view trainersFailureReason(UnverifiableCause cause)
{
    switch (cause) {
    case UnverifiableCause::TapeMalformed:
        return "a tape whose own records cannot be replayed is the trainer's failure";
    case UnverifiableCause::ProgramRefused:
        return "a sealed program that cannot be loaded and checked is the trainer's failure";
    default:
        return "a program that cannot be replayed within the auditor's limits is the trainer's failure";
    }
}

}  // namespace zkdv
