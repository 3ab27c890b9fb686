#include "zkdv/audit/audit_outcome.h"

namespace zkdv {

namespace {

constexpr AuditOutcome kEvery[] = {AuditOutcome::Passed,      AuditOutcome::ConsistentWithinRounding, AuditOutcome::Failed,
                                   AuditOutcome::NotVouched,  AuditOutcome::NotVerified,              AuditOutcome::Incomplete,
                                   AuditOutcome::IncompleteTape, AuditOutcome::IncompleteRun};

}  // namespace

std::string_view auditOutcomeName(AuditOutcome outcome)
{
    switch (outcome) {
    case AuditOutcome::Passed: return "PASSED";
    case AuditOutcome::ConsistentWithinRounding: return "CONSISTENT WITHIN ROUNDING";
    case AuditOutcome::Failed: return "FAILED";
    case AuditOutcome::NotVouched: return "NOT VOUCHED";
    case AuditOutcome::NotVerified: return "NOT VERIFIED";
    case AuditOutcome::Incomplete: return "INCOMPLETE";
    case AuditOutcome::IncompleteTape: return "INCOMPLETE TAPE";
    case AuditOutcome::IncompleteRun: return "INCOMPLETE RUN";
    }
    return "FAILED";
}

std::optional<AuditOutcome> auditOutcomeFromName(std::string_view name)
{
    for (AuditOutcome outcome : kEvery)
        if (auditOutcomeName(outcome) == name)
            return outcome;
    return std::nullopt;
}

bool outcomeConfirmsTape(AuditOutcome outcome)
{
    return outcome == AuditOutcome::Passed || outcome == AuditOutcome::ConsistentWithinRounding;
}

}  // namespace zkdv
