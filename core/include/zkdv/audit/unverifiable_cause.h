#pragma once
// Why a transaction could not be replayed, and whose failure that is (docs/replay.md,
// "Whose failure"): the auditor's machine, or the trainer's own tape and program.

#include <optional>
#include <string_view>

namespace zkdv {

enum class UnverifiableCause {
    None,  // the transaction was replayed (or its verdict says why not: diverged)
    // The auditor's side: no contract for this torch release, the program or tape file not at
    // hand, a record the case cannot read back, a worker that never started. Nothing the
    // trainer did; the run says NOT VERIFIED.
    Environment,
    // The trainer's side: the sealed program or the tape made the transaction unreplayable
    // within the limits the auditor set. The run FAILS, whatever the program's reason.
    ProgramExceededTime,    // past the auditor's time budget
    ProgramExceededMemory,  // past the auditor's memory limit
    ProgramCrashed,         // the worker running it died (a signal, an exit)
    ProgramBrokeProtocol,   // the worker running it spoke nonsense
    ProgramRefused,         // the sealed program does not load, or fails the program checks
    TapeMalformed,          // the tape's own record does not parse, or a snapshot is missing
};

// A program-side or tape-side cause: the trainer's failure.
inline bool blamesTrainer(UnverifiableCause cause) { return cause != UnverifiableCause::None && cause != UnverifiableCause::Environment; }

// "environment", "program-time", "program-memory", "program-crash", "program-protocol",
// "program-refused", "tape-malformed" (the case's spelling; None has no name and is stored as NULL).
std::string_view unverifiableCauseName(UnverifiableCause cause);
std::optional<UnverifiableCause> unverifiableCauseFromName(std::string_view name);
// The cause a stored or received name stands for; an unknown one blames nobody, so it reads as
// the environment (a stored NULL, from runs before causes were recorded, reads so too).
inline UnverifiableCause unverifiableCauseOrEnvironment(std::string_view name)
{
    return unverifiableCauseFromName(name).value_or(UnverifiableCause::Environment);
}
// What happened, in words for reports: "the sealed program exceeded the memory limit the
// auditor set", "the auditor's machine could not replay it".
std::string_view unverifiableCauseText(UnverifiableCause cause);
// Why the trainer is to blame, in a sentence for reports: "a program that cannot be replayed
// within the auditor's limits is the trainer's failure".
std::string_view trainersFailureReason(UnverifiableCause cause);

}  // namespace zkdv
