#include <cstdio>
#include <filesystem>
#include <vector>

#include "command_runner.h"
#include "commands.h"
#include "summary_json.h"
#include "terminal_progress.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/trainer_keyring.h"

namespace zkdv::cli {

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
                          "folder) is a warning, or a failure with --require-trusted, as is an unsigned tape.");
    parser.setPositionals("TAPE", "the tape file (*.zkdv)", 1, false);
    parser.addFlag("json", "print the result as JSON on stdout");
    parser.addFlag("sha256", "also compute the SHA-256 of the whole file");
    parser.addRepeatedOption("trusted-key", "KEY", "a trainer's public key (PEM) to trust; repeat for several");
    parser.addFlag("require-trusted", "fail (exit 1) unless a trusted key signed the tape");
    parser.addFlag("quiet", "no progress on stderr");
    return runCommand("verify", parser, argc, argv, [&]() {
        std::vector<std::filesystem::path> keyFiles;
        for (const std::string& file : parser.values("trusted-key"))
            keyFiles.emplace_back(file);
        TrainerKeyring keyring;
        try {
            keyring = TrainerKeyring::load(keyFiles);
        } catch (const std::exception& error) {
            throw UsageError(error.what());
        }
        TerminalProgress progress(!parser.has("quiet"));
        ScanOptions options;
        options.progress = &progress;
        options.computeFileSha256 = parser.has("sha256");
        const std::string& path = parser.positionals().front();
        TapeSummary summary = scanTape(path, nullptr, options);
        progress.finish();
        const std::optional<SamplingPlausibility> plausibility = summary.samplingPlausibility();
        const std::optional<std::string> signerKey = summary.signer ? std::optional<std::string>(summary.signer->keyId) : std::nullopt;
        const SignatureTrust trust = keyring.trustOf(signerKey);
        const TrainerKeyring::Entry* trustedBy = signerKey ? keyring.find(*signerKey) : nullptr;
        const bool untrusted = summary.complete() && trust != SignatureTrust::Trusted;
        if (untrusted && (trust == SignatureTrust::UnknownKey || parser.has("require-trusted")))
            std::fprintf(stderr, "%s: %s\n", parser.has("require-trusted") ? "error" : "warning",
                         trust == SignatureTrust::Unsigned ? "the tape is not signed"
                                                           : ("the tape is signed by a key that is not trusted (key id " + *signerKey +
                                                              "); trust it with --trusted-key or in " + TrainerKeyring::userFolder().string())
                                                                 .c_str());
        if (parser.has("json")) {
            nlohmann::json out = summaryJson(summary);
            out["signature_trust"] = summary.complete() ? nlohmann::json(signatureTrustName(trust)) : nlohmann::json();
            out["trusted_key_file"] = trustedBy ? nlohmann::json(trustedBy->file.string()) : nlohmann::json();
            std::printf("%s\n", toJsonText(out, 2).c_str());
        } else {
            std::printf("%s: %s\n", path.c_str(), summaryLine(summary).c_str());
            std::printf("  chain head %s\n", toHex(summary.chainHead).c_str());
            if (summary.root) {
                std::printf("  sampling: %s\n", std::string(samplingGuaranteeText(samplingGuaranteeOf(summary.root->formatMinor))).c_str());
                std::printf("  final state: %s\n", finalStateText(summary).c_str());
            }
            if (plausibility)
                std::printf("%s", samplingPlausibilityLines(*plausibility).c_str());
            if (summary.signer)
                std::printf("  signed: %s key %s, %s\n", keyAlgorithmName(summary.signer->algorithm).c_str(), summary.signer->keyId.c_str(),
                            trustedBy ? ("trusted (" + trustedBy->file.string() + ")").c_str() : "not a trusted key");
            else if (summary.complete())
                std::printf("  signed: no\n");
            if (summary.fileSha256)
                std::printf("  file sha256 %s\n", toHex(*summary.fileSha256).c_str());
            if (summary.status == TapeStatus::Unsealed)
                std::printf("  the tape has no seal: the recorder is still writing it or stopped without sealing\n");
        }
        const bool trustFails = parser.has("require-trusted") && untrusted;
        return summary.complete() && !(plausibility && plausibility->implausible()) && !trustFails ? kExitOk : kExitCheckFailed;
    });
}

}  // namespace zkdv::cli
