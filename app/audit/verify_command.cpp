#include <cstdio>

#include "command_runner.h"
#include "commands.h"
#include "summary_json.h"
#include "terminal_progress.h"
#include "zkdv/util/json_text.h"

namespace zkdv::cli {

int runVerify(int argc, char** argv)
{
    ArgumentParser parser("zkdv-audit verify TAPE [--json] [--sha256]",
                          "Checks a tape's framing, header checks, record digests, hash chain, record order,\n"
                          "payload structure and seal. Exit 0 when the tape is sealed and intact, 1 when it is\n"
                          "damaged, truncated or unsealed (the first problem is named with record index and\n"
                          "byte offset) or carries implausibly few sampled checks for its probabilities (a sign\n"
                          "that its draws were ground, tape format section 5.2), 2 when it cannot be read or is\n"
                          "not a tape.");
    parser.setPositionals("TAPE", "the tape file (*.zkdv)", 1, false);
    parser.addFlag("json", "print the result as JSON on stdout");
    parser.addFlag("sha256", "also compute the SHA-256 of the whole file");
    parser.addFlag("quiet", "no progress on stderr");
    return runCommand("verify", parser, argc, argv, [&]() {
        TerminalProgress progress(!parser.has("quiet"));
        ScanOptions options;
        options.progress = &progress;
        options.computeFileSha256 = parser.has("sha256");
        const std::string& path = parser.positionals().front();
        TapeSummary summary = scanTape(path, nullptr, options);
        progress.finish();
        const std::optional<SamplingPlausibility> plausibility = summary.samplingPlausibility();
        if (parser.has("json")) {
            std::printf("%s\n", toJsonText(summaryJson(summary), 2).c_str());
        } else {
            std::printf("%s: %s\n", path.c_str(), summaryLine(summary).c_str());
            std::printf("  chain head %s\n", toHex(summary.chainHead).c_str());
            if (summary.root) {
                std::printf("  sampling: %s\n", std::string(samplingGuaranteeText(samplingGuaranteeOf(summary.root->formatMinor))).c_str());
                std::printf("  final state: %s\n", finalStateText(summary).c_str());
            }
            if (plausibility)
                std::printf("%s", samplingPlausibilityLines(*plausibility).c_str());
            if (summary.fileSha256)
                std::printf("  file sha256 %s\n", toHex(*summary.fileSha256).c_str());
            if (summary.status == TapeStatus::Unsealed)
                std::printf("  the tape has no seal: the recorder is still writing it or stopped without sealing\n");
        }
        return summary.complete() && !(plausibility && plausibility->implausible()) ? kExitOk : kExitCheckFailed;
    });
}

}  // namespace zkdv::cli
