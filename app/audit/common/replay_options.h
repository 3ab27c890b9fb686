#pragma once
// The options every command that runs replay workers reads the same way: which seed, device,
// kernel settings and threads (`replay`, `calibrate`).

#include "argument_parser.h"
#include "zkdv/replay/replay_runner.h"

namespace zkdv::cli {

// Sets `request`'s seed (when given), kernels, device, threads and intra-op threads from
// `parser`'s --seed, --kernels, --device, --threads and --intra-op-threads; throws
// UsageError for a bad --kernels.
void readReplayWorkerOptions(const ArgumentParser& parser, ReplayRequest& request);

}  // namespace zkdv::cli
