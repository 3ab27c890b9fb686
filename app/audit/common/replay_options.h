#pragma once
// What every command that runs replay workers does the same way (`replay`, `calibrate`): read
// which seed, device, kernel settings and threads, and run the replay with progress.

#include <string>

#include "argument_parser.h"
#include "zkdv/replay/replay_runner.h"

namespace zkdv::cli {

// Sets `request`'s seed (when given), kernels, device, threads and intra-op threads from
// `parser`'s --seed, --kernels, --device, --threads and --intra-op-threads; throws
// UsageError for a bad --kernels.
void readReplayWorkerOptions(const ArgumentParser& parser, ReplayRequest& request);

// Runs `request` on `store` with progress on stderr (none when `quiet`). A replay that cannot
// run (ReplayError: the case or the request) is a UsageError, after `where` when given.
ReplaySummary runReplayInTerminal(CaseStore& store, ReplayRequest request, bool quiet, const std::string& where = {});

}  // namespace zkdv::cli
