#pragma once
// Internal to core/report: who signed the tape, as the reader's trainer keyring judges it, and
// what the report says and concludes about it (docs/signing.md, "For auditors").

#include <string>

#include "zkdv/report/audit_report.h"

namespace zkdv {
struct CaseTape;
}

namespace zkdv::report_detail {

// Fills report's signer members from the case and the keyring `options` names; a keyring that
// cannot be read trusts nobody, and signatureProblem says why.
void readSigner(const CaseTape& tape, const ReportOptions& options, ReportData& report);

// The first page's warning about the signer, empty when a trusted key signed the tape or
// nothing was expected of an unsigned one.
std::string signerWarning(const ReportData& report);

// A report that requires a trusted signer (ReportOptions::requireTrustedSigner) does not pass
// without one: a passing conclusion becomes NOT VERIFIED, saying why. Runs after writeConclusion.
void requireTrustedSigner(ReportData& report);

}  // namespace zkdv::report_detail
