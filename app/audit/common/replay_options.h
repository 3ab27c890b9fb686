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

// Adds --tolerance T and --calibration FILE, as every command that names a replay's judging
// reads them (`replay`, `slurm-script`, `kubernetes-job`, `merge`).
void addToleranceOptions(ArgumentParser& parser);

// Sets `request`'s tolerance (the defaults unless --tolerance), whether its envelope was given,
// and its calibration (loaded: an unreadable or malformed file throws IoError or FormatError
// naming it); throws UsageError for a bad tolerance, or an envelope set by both.
void readToleranceOptions(const ArgumentParser& parser, ReplayRequest& request);

// Runs `request` on `store` with progress on stderr (none when `quiet`). A replay that cannot
// run (ReplayError: the case or the request) is a UsageError, after `where` when given.
ReplaySummary runReplayInTerminal(CaseStore& store, ReplayRequest request, bool quiet, const std::string& where = {});

}  // namespace zkdv::cli
