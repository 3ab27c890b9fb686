#include "replay_options.h"

#include "zkdv/replay/kernel_profile.h"

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

}  // namespace zkdv::cli
