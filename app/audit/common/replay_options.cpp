#include "replay_options.h"

#include "terminal_progress.h"
#include "zkdv/replay/kernel_profile.h"
#include "zkdv/store/case_store.h"

namespace zkdv::cli {

void readReplayWorkerOptions(const ArgumentParser& parser, ReplayRequest& request)
{
    // Unset, the replay draws it: a seed the trainer could know makes the audit's bound void.
    if (parser.has("seed"))
        request.seed = parser.unsignedValue("seed", 0);
    const std::optional<KernelChoice> kernels = parseKernelChoice(parser.value("kernels", "recorded"));
    if (!kernels)
        throw UsageError("--kernels must be recorded or host, not " + parser.value("kernels"));
    request.kernels = *kernels;
    request.device = parser.value("device", "cpu");
    request.threads = static_cast<unsigned>(parser.unsignedValue("threads", 0));
    request.intraOpThreads = static_cast<int>(parser.unsignedValue("intra-op-threads", 0));
}

void addToleranceOptions(ArgumentParser& parser)
{
    parser.addOption("tolerance", "T", "ulp=N,rel=X,fingerprint=X,envelope=X or exact (defaults: " + Tolerance::defaults().toString() + ")");
    parser.addOption("calibration", "FILE",
                     "across environments, derive the envelope from this calibration (zkdv-audit calibrate) when it was measured "
                     "for this run's pair of environments; otherwise the default envelope applies and the run says why");
}

void readToleranceOptions(const ArgumentParser& parser, ReplayRequest& request)
{
    try {
        request.tolerance = parser.has("tolerance") ? Tolerance::parse(parser.value("tolerance")) : Tolerance::defaults();
    } catch (const Error& error) {
        throw UsageError(error.what());
    }
    if (parser.has("tolerance")) {
        const std::string text = parser.value("tolerance");
        request.envelopeGiven = text == "exact" || text.find("envelope=") != std::string::npos;
    }
    if (parser.has("calibration")) {
        if (request.envelopeGiven)
            throw UsageError("--calibration derives the envelope; --tolerance " + parser.value("tolerance") + " sets it too: choose one");
        // A malformed file is an input error (exit 2) naming the file and the member.
        request.calibration = loadCalibration(parser.value("calibration"));
    }
}

ReplaySummary runReplayInTerminal(CaseStore& store, ReplayRequest request, bool quiet, const std::string& where)
{
    TerminalProgress progress(!quiet);
    request.progress = &progress;
    try {
        ReplaySummary summary = runReplay(store, request);
        progress.finish();
        return summary;
    } catch (const ReplayError& error) {
        progress.finish();
        throw UsageError(where.empty() ? std::string(error.what()) : where + ": " + error.what());
    }
}

}  // namespace zkdv::cli
