#include "zkdv/report/audit_attestation.h"

#include "zkdv/audit/audit_seed.h"
#include "zkdv/audit/run_status.h"
#include "zkdv/audit/verdict.h"
#include "zkdv/tape/tape_signature.h"
#include "zkdv/util/dsse.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

namespace {

using nlohmann::json;

json policyOf(const ReportData& report)
{
    return {{"selection", report.selection},
            {"seed", report.seed},
            {"seed_source", std::string(seedSourceName(report.seedSource))},
            {"tolerance", report.tolerance}};
}

}  // namespace

json auditStatement(const ReportData& report)
{
    const json policy = policyOf(report);
    json transactions = json::array();
    for (const ReportTransaction& transaction : report.transactions)
        transactions.push_back({{"index", transaction.index}, {"verdict", std::string(verdictName(transaction.verdict))}});
    json bound = nullptr;
    if (report.sampling)
        bound = {{"population", report.sampling->population}, {"sampled", report.sampling->sampled}, {"failures", report.sampling->failures},
                 {"upper95", report.sampling->upper95}, {"upper99", report.sampling->upper99}, {"method", report.sampling->method}};
    const json details = {
        {"outcome", std::string(auditOutcomeName(report.outcome))},
        {"headline", report.headline},
        {"warnings", report.warnings},
        {"run_id", report.runId},
        {"run_status", report.runStatus ? json(std::string(runStatusName(*report.runStatus))) : json()},
        {"device", report.device},
        {"libtorch", report.libtorchVersion},
        {"os", report.operatingSystem},
        {"numeric_regime", report.numericRegime},
        {"selected", report.selectedCount},
        {"replayed", report.replayedCount},
        {"verdicts", {{"exact", report.exact}, {"within_tolerance", report.withinTolerance}, {"diverged", report.diverged}, {"unverifiable", report.unverifiable}}},
        {"bound", bound},
        {"tape_signer", report.signerKeyId.empty() ? json() : json(report.signerKeyId)},
        {"transactions", transactions},
    };
    const json predicate = {
        {"verifier", {{"id", "https://zkdv.dev/zkdv-audit"}, {"version", {{"zkdv", report.replayZkdvVersion}, {"report", report.zkdvVersion}}}}},
        {"timeVerified", report.generatedAt},
        {"resourceUri", "zkdv:tape:" + report.chainHead},
        {"policy", {{"uri", kReplayPolicyUri}, {"digest", {{"sha256", toHex(Sha256::of(ByteSpan(std::string_view(policy.dump()))))}}}, {"annotations", policy}}},
        {"inputAttestations", json::array()},
        // SLSA knows PASSED and FAILED only: PASSED is bit for bit, and the weaker outcomes read
        // FAILED against this policy, with the outcome word signed beside it (zkdv.outcome).
        {"verificationResult", report.passed() ? "PASSED" : "FAILED"},
        {"verifiedLevels", json::array()},
        {"slsaVersion", "1.0"},
        {"zkdv", details},
    };
    return {
        {"_type", kInTotoStatementType},
        {"subject", json::array({
                        {{"name", "tape"}, {"digest", {{"zkdv-chain-head", report.chainHead}}}, {"annotations", {{"size", report.tapeSize}}}},
                        {{"name", "program"}, {"digest", {{"sha256", report.programSha256}}}},
                    })},
        {"predicateType", kVerificationSummaryType},
        {"predicate", predicate},
    };
}

json signAuditAttestation(const ReportData& report, const SigningKey& key)
{
    const std::string statement = auditStatement(report).dump();
    const DsseEnvelope envelope = DsseEnvelope::sign(kInTotoPayloadType, std::vector<std::uint8_t>(statement.begin(), statement.end()), key);
    return {{"mediaType", kSigstoreBundleType},
            {"verificationMaterial", {{"publicKey", {{"hint", key.publicKey().keyId()}}}}},
            {"dsseEnvelope", envelope.toJson()}};
}

CheckedAttestation checkAuditAttestation(std::string_view bundleText, const std::vector<VerifyingKey>& trusted)
{
    const json bundle = parseUntrustedJson(bundleText, "attestation");
    if (!bundle.is_object() || bundle.value("mediaType", json()) != kSigstoreBundleType || !bundle.contains("dsseEnvelope"))
        throw FormatError(std::string("attestation: not a Sigstore bundle (mediaType ") + kSigstoreBundleType + ") holding a dsseEnvelope");
    const DsseEnvelope envelope = DsseEnvelope::parse(bundle["dsseEnvelope"], "attestation: dsseEnvelope");
    if (envelope.payloadType != kInTotoPayloadType)
        throw FormatError("attestation: payloadType is \"" + envelope.payloadType + "\", expected \"" + kInTotoPayloadType + "\"");
    CheckedAttestation checked;
    for (const VerifyingKey& key : trusted)
        if (envelope.verifiedBy(key)) {
            checked.keyId = key.keyId();
            break;
        }
    if (checked.keyId.empty()) {
        std::string named;
        for (const DsseSignature& signature : envelope.signatures)
            named += (named.empty() ? "" : ", ") + (signature.keyId.empty() ? std::string("(no key id)") : signature.keyId);
        throw Error("attestation: no trusted key made its signature (it names key " + named + "); give the auditor's public key with --trusted-key");
    }
    checked.statement = parseUntrustedJson(std::string_view(reinterpret_cast<const char*>(envelope.payload.data()), envelope.payload.size()),
                                           "attestation statement");
    const json& statement = checked.statement;
    if (!statement.is_object() || statement.value("_type", json()) != kInTotoStatementType ||
        statement.value("predicateType", json()) != kVerificationSummaryType)
        throw FormatError(std::string("attestation: the statement is not an in-toto Statement v1 with predicate type ") + kVerificationSummaryType);
    const json& subjects = statement.contains("subject") ? statement["subject"] : json();
    if (!subjects.is_array() || subjects.empty() || !subjects[0].is_object() || subjects[0].value("name", json()) != "tape")
        throw FormatError("attestation: the statement's first subject is not the tape");
    const json& digest = subjects[0].contains("digest") ? subjects[0]["digest"] : json();
    const json& annotations = subjects[0].contains("annotations") ? subjects[0]["annotations"] : json();
    if (!digest.is_object() || !digest.contains("zkdv-chain-head") || !digest["zkdv-chain-head"].is_string() || !annotations.is_object() ||
        !annotations.contains("size") || !annotations["size"].is_number_unsigned())
        throw FormatError("attestation: the tape subject has no zkdv-chain-head digest and size");
    checked.tapeChainHead = digest["zkdv-chain-head"].get<std::string>();
    checked.tapeSize = annotations["size"].get<std::uint64_t>();
    const json& predicate = statement.contains("predicate") ? statement["predicate"] : json();
    const json result = predicate.is_object() ? predicate.value("verificationResult", json()) : json();
    if (result != "PASSED" && result != "FAILED")
        throw FormatError("attestation: verificationResult must be PASSED or FAILED");
    checked.verificationResult = result.get<std::string>();
    return checked;
}

}  // namespace zkdv
