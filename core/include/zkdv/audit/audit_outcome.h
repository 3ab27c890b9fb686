#pragma once
// What an audit concludes about a tape, in one word (docs/report.md, "Outcomes"): the closed
// set the report, the signed verdict, `info`, the CLI and the workstation all say. PASSED
// means bit for bit; a conclusion that rests on any tolerance, envelope, calibration or
// excuse is CONSISTENT WITHIN ROUNDING at best, so a hole in an excuse can never buy PASSED.

#include <optional>
#include <string_view>

namespace zkdv {

enum class AuditOutcome {
    Passed,                    // every replayed transaction reproduced the tape bit for bit
    ConsistentWithinRounding,  // all reproduced, some only within the rounding the tolerance allows
    Failed,                    // the tape (or the run it claims to continue) was found at fault
    NotVouched,                // the case's replay results carry no seal this reader trusts
    NotVerified,               // nothing conclusive was checked
    Incomplete,                // the replay did not finish what was selected
    IncompleteTape,            // the tape was never sealed
    IncompleteRun,             // the tape continues a tape the case does not hold
};

// "PASSED", "CONSISTENT WITHIN ROUNDING", "FAILED", "NOT VOUCHED", "NOT VERIFIED",
// "INCOMPLETE", "INCOMPLETE TAPE", "INCOMPLETE RUN": the report's, --json's and the signed
// verdict's spelling.
std::string_view auditOutcomeName(AuditOutcome outcome);
std::optional<AuditOutcome> auditOutcomeFromName(std::string_view name);

// PASSED or CONSISTENT WITHIN ROUNDING: the replay confirmed the tape (exit status 0).
bool outcomeConfirmsTape(AuditOutcome outcome);

}  // namespace zkdv
