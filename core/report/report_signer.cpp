#include "report_signer.h"

#include <exception>

#include "zkdv/store/case_store.h"
#include "zkdv/util/trainer_keyring.h"

namespace zkdv::report_detail {

void readSigner(const CaseTape& tape, const ReportOptions& options, ReportData& report)
{
    report.signerKeyId = tape.signerKeyId;
    report.signerAlgorithm = tape.signerAlgorithm;
    report.signerRequired = options.requireTrustedSigner;
    const std::optional<std::string> signer = tape.isSigned() ? std::optional<std::string>(tape.signerKeyId) : std::nullopt;
    try {
        const TrainerKeyring keyring = TrainerKeyring::load(options.trustedKeyFiles);
        report.signatureTrust = keyring.trustOf(signer);
        if (const TrainerKeyring::Entry* entry = signer ? keyring.find(*signer) : nullptr)
            report.trustedKeyFile = entry->file.string();
    } catch (const std::exception& error) {
        // A keyring there is but cannot be used was meant to check signatures: an unsigned tape
        // is warned of as when it holds keys.
        report.signatureTrust = signer ? SignatureTrust::UnknownKey : SignatureTrust::UnsignedExpected;
        report.signatureProblem = error.what();
    }
}

std::string signerWarning(const ReportData& report)
{
    const std::string problem = report.signatureProblem.empty() ? std::string() : " (the keyring could not be read: " + report.signatureProblem + ")";
    const std::string required = report.signerRequired ? " This report requires a trusted signer (--require-trusted), so it cannot pass." : "";
    switch (report.signatureTrust) {
    case SignatureTrust::Trusted: return {};
    case SignatureTrust::UnknownKey:
        return "The tape is signed by a key that is not in the trainer keyring (key id " + report.signerKeyId + ")" + problem +
               ": the signature says who made the tape only once that key is known to be the trainer's." + required;
    case SignatureTrust::UnsignedExpected:
        return "The tape is not signed, though the trainer keyring holds keys to check its signature with" + problem +
               ": a signature can be stripped from a tape, so nothing says who made this one." + required;
    case SignatureTrust::Unsigned: break;
    }
    return report.signerRequired ? "The tape is not signed." + required : std::string();
}

void requireTrustedSigner(ReportData& report)
{
    if (!report.signerRequired || report.signatureTrust == SignatureTrust::Trusted || !report.confirmsTape())
        return;
    const std::string replay = report.headline.substr(report.headline.find(':') + 1);
    report.outcome = AuditOutcome::NotVerified;
    report.headline = "NOT VERIFIED: " + untrustedSignerText(report.signatureTrust, report.signerKeyId) +
                      ", and this report requires a trusted signer (--require-trusted). The replay found no fault:" + replay;
}

}  // namespace zkdv::report_detail
