#include <cstdio>
#include <vector>

#include "command_runner.h"
#include "commands.h"
#include "zkdv/report/audit_attestation.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/small_file.h"
#include "zkdv/util/trust_file.h"

namespace zkdv::cli {

// An attestation is a page of JSON; anything far larger is not one.
constexpr std::uint64_t kMaxAttestationBytes = 64 << 20;

int runVerifyAttestation(int argc, char** argv)
{
    ArgumentParser parser("zkdv-audit verify-attestation FILE --trusted-key KEY... [--tape TAPE] [--require-passed] [--json]",
                          "Checks a signed audit verdict (zkdv-audit report --attest): that a trusted key (an\n"
                          "auditor's public key, PEM) signed it, that it is a verification summary about a tape,\n"
                          "and with --tape that it is about that tape (its chain head and size). Prints who signed\n"
                          "it and what it concluded. Exit 0 when all that holds, 1 when it does not (or, with\n"
                          "--require-passed, when the verdict is FAILED), 2 when a file cannot be read or is\n"
                          "not an attestation.");
    parser.setPositionals("FILE", "the attestation (*.intoto.json)", 1, false);
    parser.addRepeatedOption("trusted-key", "KEY", "an auditor's public key (PEM) to trust; repeat for several");
    parser.addOption("tape", "TAPE", "the tape the verdict must be about");
    parser.addFlag("require-passed", "fail (exit 1) unless the verdict is PASSED");
    parser.addFlag("json", "print the result as JSON on stdout");
    return runCommand("verify-attestation", parser, argc, argv, [&]() {
        const std::vector<std::string> keyFiles = parser.values("trusted-key");
        if (keyFiles.empty())
            throw UsageError("--trusted-key KEY is required: an attestation is only as good as the key that signed it");
        std::vector<VerifyingKey> trusted;
        try {
            for (const std::string& file : keyFiles) {
                requireTrustFile(file, TrustFileUse::Vouching, "the auditor key file");  // as every key trusted (docs/signing.md)
                trusted.push_back(VerifyingKey::fromPemFile(file));
            }
        } catch (const std::exception& error) {
            throw UsageError(error.what());
        }
        const std::string& path = parser.positionals().front();
        const std::string text = readSmallFile(path, kMaxAttestationBytes, "an attestation");
        std::string problem;
        CheckedAttestation checked;
        try {
            checked = checkAuditAttestation(text, trusted);
        } catch (const FormatError&) {
            throw;  // not an attestation: exit 2
        } catch (const Error& error) {
            problem = error.what();  // authentic only under a key nobody trusts: exit 1
        }
        if (problem.empty() && parser.has("tape")) {
            const TapeSummary tape = scanTape(parser.value("tape"));
            if (!tape.complete())
                throw UsageError(parser.value("tape") + " is not a sealed, intact tape" + (tape.problem ? ": " + tape.problem->describe() : std::string()));
            if (toHex(tape.chainHead) != checked.tapeChainHead || tape.fileSize != checked.tapeSize)
                problem = "the attestation is about another tape (chain head " + checked.tapeChainHead + ", " + std::to_string(checked.tapeSize) +
                          " bytes), not " + parser.value("tape") + " (chain head " + toHex(tape.chainHead) + ", " + std::to_string(tape.fileSize) + " bytes)";
        }
        const bool resultFails = problem.empty() && parser.has("require-passed") && checked.verificationResult != "PASSED";
        if (parser.has("json")) {
            nlohmann::json out = {{"authentic", problem.empty()},
                                  {"problem", problem.empty() ? nlohmann::json() : nlohmann::json(problem)},
                                  {"key_id", checked.keyId.empty() ? nlohmann::json() : nlohmann::json(checked.keyId)},
                                  {"tape_chain_head", problem.empty() ? nlohmann::json(checked.tapeChainHead) : nlohmann::json()},
                                  {"verification_result", problem.empty() ? nlohmann::json(checked.verificationResult) : nlohmann::json()},
                                  {"statement", problem.empty() ? checked.statement : nlohmann::json()}};
            std::printf("%s\n", toJsonText(out, 2).c_str());
        } else if (problem.empty()) {
            const nlohmann::json& details = checked.statement["predicate"].contains("zkdv") ? checked.statement["predicate"]["zkdv"] : nlohmann::json();
            std::printf("%s: signed by trusted key %s\n  tape %s (%llu bytes): %s\n", path.c_str(), checked.keyId.c_str(), checked.tapeChainHead.c_str(),
                        static_cast<unsigned long long>(checked.tapeSize), checked.verificationResult.c_str());
            if (details.is_object() && details.contains("headline") && details["headline"].is_string())
                std::printf("  %s\n", details["headline"].get<std::string>().c_str());
        }
        if (!problem.empty())
            std::fprintf(stderr, "%s: %s\n", path.c_str(), problem.c_str());
        if (resultFails)
            std::fprintf(stderr, "%s: the verdict is %s\n", path.c_str(), checked.verificationResult.c_str());
        return problem.empty() && !resultFails ? kExitOk : kExitCheckFailed;
    });
}

}  // namespace zkdv::cli
