#include <cstdio>
#include <filesystem>
#include <vector>

#include "command_runner.h"
#include "commands.h"
#include "summary_json.h"
#include "terminal_progress.h"
#include "trusted_key_options.h"
#include "zkdv/provenance/model_signing_bundle.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/trainer_keyring.h"

namespace zkdv::cli {

namespace {

// The detached signature beside the tape (or named by --signature), when there is one.
struct DetachedResult {
    std::filesystem::path file;
    std::optional<DetachedSignatureCheck> check;
    std::string problem;  // why it fails; empty when it holds
};

std::optional<DetachedResult> checkDetached(const std::filesystem::path& tape, const std::string& named, const TrainerKeyring& keyring)
{
    DetachedResult result;
    result.file = named.empty() ? detachedSignaturePathOf(tape) : std::filesystem::path(named);
    std::error_code error;
    if (named.empty() && !std::filesystem::exists(result.file, error))
        return std::nullopt;
    try {
        result.check = checkDetachedSignatureFile(result.file, tape, keyring);
    } catch (const IoError&) {
        throw;  // cannot be read: exit 2, as for the tape
    } catch (const Error& failure) {
        result.problem = failure.what();  // malformed, wrong key or other content: the check fails
    }
    return result;
}

nlohmann::json detachedJson(const std::optional<DetachedResult>& detached)
{
    if (!detached)
        return nullptr;
    const DetachedSignatureCheck* check = detached->check ? &*detached->check : nullptr;
    return {{"file", detached->file.string()},
            {"valid", detached->problem.empty()},
            {"problem", detached->problem.empty() ? nlohmann::json() : nlohmann::json(detached->problem)},
            {"signature_trust", check ? nlohmann::json(signatureTrustName(check->trust)) : nlohmann::json()},
            {"key_id", check && !check->keyId.empty() ? nlohmann::json(check->keyId) : nlohmann::json()},
            {"key_hint", check && !check->keyHint.empty() ? nlohmann::json(check->keyHint) : nlohmann::json()},
            {"trusted_key_file", check && !check->trustedKeyFile.empty() ? nlohmann::json(check->trustedKeyFile) : nlohmann::json()}};
}

}  // namespace

int runVerify(int argc, char** argv)
{
    ArgumentParser parser("zkdv-audit verify TAPE [--trusted-key KEY]... [--require-trusted] [--json] [--sha256]",
                          "Checks a tape's framing, header checks, record digests, hash chain, record order,\n"
                          "payload structure and seal. Exit 0 when the tape is sealed and intact, 1 when it is\n"
                          "damaged, truncated or unsealed (the first problem is named with record index and\n"
                          "byte offset) or carries implausibly few sampled checks for its probabilities (a sign\n"
                          "that its draws were ground, tape format section 5.2), 2 when it cannot be read or is\n"
                          "not a tape.\n"
                          "A signed tape (format 1.11) is checked against its signature: one that does not verify,\n"
                          "or was made for another tape, fails the check (1). A valid signature by a key that is\n"
                          "not trusted (--trusted-key, or a *.pem in the trainer-keys folder of the zkdv config\n"
                          "folder) is a warning, or a failure with --require-trusted, as is an unsigned tape: a\n"
                          "warning too when the keyring holds keys, since a signature can be stripped.\n"
                          "A detached signature over the whole file (TAPE.sig, written by the recorder or by\n"
                          "zkdv-audit sign or model_signing sign key) is checked too: one that does not verify\n"
                          "or signs other content fails the check; one by a trusted key makes the tape trusted.");
    parser.setPositionals("TAPE", "the tape file (*.zkdv)", 1, false);
    parser.addFlag("json", "print the result as JSON on stdout");
    parser.addFlag("sha256", "also compute the SHA-256 of the whole file");
    addTrustedKeyOptions(parser, "fail (exit 1)");
    parser.addOption("signature", "FILE", "a detached signature over the tape (default: TAPE.sig when it exists)");
    parser.addFlag("quiet", "no progress on stderr");
    return runCommand("verify", parser, argc, argv, [&]() {
        const TrustedKeyOptions trustOptions = readTrustedKeyOptions(parser);
        const TrainerKeyring& keyring = trustOptions.keyring;
        TerminalProgress progress(!parser.has("quiet"));
        ScanOptions options;
        options.progress = &progress;
        options.computeFileSha256 = parser.has("sha256");
        const std::string& path = parser.positionals().front();
        TapeSummary summary = scanTape(path, nullptr, options);
        progress.finish();
        const std::optional<SamplingPlausibility> plausibility = summary.samplingPlausibility();
        const std::optional<std::string> signerKey = summary.signer ? std::optional<std::string>(summary.signer->keyId) : std::nullopt;
        const std::optional<DetachedResult> detached = checkDetached(path, parser.value("signature", ""), keyring);
        const bool detachedTrusted = detached && detached->problem.empty() && detached->check->trust == SignatureTrust::Trusted;
        const SignatureTrust sealTrust = keyring.trustOf(signerKey);
        const bool detachedUntrusted = detached && detached->problem.empty() && !detachedTrusted;
        const SignatureTrust trust = detachedTrusted ? SignatureTrust::Trusted
                                     : isUnsigned(sealTrust) && detachedUntrusted ? SignatureTrust::UnknownKey
                                                                                                    : sealTrust;
        const std::string untrustedKey = signerKey ? "key id " + *signerKey
                                         : detachedUntrusted && !detached->check->keyHint.empty() ? "key hint " + detached->check->keyHint
                                                                                                  : std::string("an unnamed key");
        const TrainerKeyring::Entry* trustedBy = signerKey ? keyring.find(*signerKey) : nullptr;
        const bool untrusted = summary.complete() && trust != SignatureTrust::Trusted;
        if (detached && !detached->problem.empty())
            std::fprintf(stderr, "error: the detached signature %s: %s\n", detached->file.c_str(), detached->problem.c_str());
        // An unsigned tape where the keyring expects a signature is warned as loudly as a forger's
        // key: stripping a signature must not read better than keeping it.
        if (untrusted && (trust != SignatureTrust::Unsigned || trustOptions.required))
            std::fprintf(stderr, "%s: %s\n", trustOptions.required ? "error" : "warning",
                         trust == SignatureTrust::UnknownKey ? ("the tape is signed by a key that is not trusted (" + untrustedKey +
                                                                "); trust it with --trusted-key or in " + TrainerKeyring::userFolder().string())
                                                                   .c_str()
                                                             : untrustedSignerText(trust, {}).c_str());
        if (parser.has("json")) {
            nlohmann::json out = summaryJson(summary);
            out["signature_trust"] = summary.complete() ? nlohmann::json(signatureTrustName(trust)) : nlohmann::json();
            out["trusted_key_file"] = trustedBy ? nlohmann::json(trustedBy->file.string()) : nlohmann::json();
            out["detached_signature"] = detachedJson(detached);
            std::printf("%s\n", toJsonText(out, 2).c_str());
        } else {
            std::printf("%s: %s\n", path.c_str(), summaryLine(summary).c_str());
            std::printf("  chain head %s\n", toHex(summary.chainHead).c_str());
            if (summary.root) {
                std::printf("  sampling: %s\n", std::string(samplingGuaranteeText(samplingGuaranteeOf(summary.root->formatMinor))).c_str());
                std::printf("  final state: %s\n", finalStateText(summary).c_str());
                if (const std::optional<DatasetDeclaration>& dataset = summary.root->dataset)
                    std::printf("  batches bound to the commitment of %llu samples with root %s (%s)\n",
                                static_cast<unsigned long long>(dataset->leafCount), toHex(dataset->root).c_str(),
                                dataset->countCommitted()
                                    ? "sha256-merkle-v2: the root commits the count"
                                    : "sha256-merkle-v1: the root does not commit the count, which is the tape's claim; compare it with the published one");
            }
            if (plausibility)
                std::printf("%s", samplingPlausibilityLines(*plausibility).c_str());
            if (summary.signer)
                std::printf("  signed: %s key %s, %s\n", keyAlgorithmName(summary.signer->algorithm).c_str(), summary.signer->keyId.c_str(),
                            trustedBy ? ("trusted (" + trustedBy->file.string() + ")").c_str() : "not a trusted key");
            else if (summary.complete())
                std::printf("  signed: no%s\n", trust == SignatureTrust::UnsignedExpected ? ", though your trainer keyring expects a signature" : "");
            if (detached && detached->problem.empty())
                std::printf("  detached signature %s: %s\n", detached->file.c_str(),
                            detachedTrusted ? ("by trusted key " + detached->check->keyId + " (" + detached->check->trustedKeyFile + ")").c_str()
                                            : "over this file, by a key that is not trusted");
            else if (detached)
                std::printf("  detached signature %s: INVALID (%s)\n", detached->file.c_str(), detached->problem.c_str());
            if (summary.fileSha256)
                std::printf("  file sha256 %s\n", toHex(*summary.fileSha256).c_str());
            if (summary.status == TapeStatus::Unsealed)
                std::printf("  the tape has no seal: the recorder is still writing it or stopped without sealing\n");
        }
        const bool trustFails = trustOptions.required && untrusted;
        const bool detachedFails = detached && !detached->problem.empty();
        return summary.complete() && !(plausibility && plausibility->implausible()) && !trustFails && !detachedFails ? kExitOk : kExitCheckFailed;
    });
}

}  // namespace zkdv::cli
