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
