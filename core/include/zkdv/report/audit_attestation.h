#pragma once
// A signed audit verdict (docs/signing.md, "Signed audit verdicts"): the report's conclusion
// as an in-toto Statement v1 whose predicate is a SLSA Verification Summary Attestation
// (https://slsa.dev/verification_summary/v1) about the tape and its program, signed in a DSSE
// envelope and written as a Sigstore bundle (v0.3, the key named by its id). Anyone holding the
// auditor's public key can check who concluded what about which tape; a PDF proves neither.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "zkdv/report/audit_report.h"
#include "zkdv/util/dsse.h"
#include "zkdv/util/signing_key.h"

namespace zkdv {

inline constexpr char kVerificationSummaryType[] = "https://slsa.dev/verification_summary/v1";
inline constexpr char kReplayPolicyUri[] = "https://zkdv.dev/policy/replay/v1";

// The statement: subjects the tape (chain head, size) and its program (SHA-256); the VSA with
// PASSED or FAILED (anything but a passed report is FAILED), the policy (selection, seed,
// tolerance), and the details under the predicate's `zkdv` member.
nlohmann::json auditStatement(const ReportData& report);
// The statement signed with `key`, as a Sigstore bundle.
nlohmann::json signAuditAttestation(const ReportData& report, const SigningKey& key);

struct CheckedAttestation {
    std::string keyId;               // the trusted key that verified it
    nlohmann::json statement;
    std::string tapeChainHead;       // the tape subject's digest
    std::uint64_t tapeSize = 0;
    std::string verificationResult;  // PASSED or FAILED
};

// Checks a bundle written by signAuditAttestation: a signature by one of `trusted` over an
// in-toto statement with a VSA predicate and a tape subject. Throws FormatError naming what is
// malformed, Error when no trusted key made the signature.
CheckedAttestation checkAuditAttestation(std::string_view bundleText, const std::vector<VerifyingKey>& trusted);

}  // namespace zkdv
