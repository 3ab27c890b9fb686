#pragma once
// A shard case of a sharded replay with made-up results, stored the way `zkdv-audit replay
// --shard I/N --into FILE` stores a run (sealed by finishRun with the key of the current
// settings folder, then trimmed), for tests of the merge that need no replay.

#include <cstdint>
#include <optional>
#include <string>

#include "zkdv/audit/program_check.h"
#include "zkdv/audit/run_status.h"

namespace zkdv::test {

struct MadeUpShard {
    std::string selection = "random:30";
    std::uint64_t seed = 9;
    unsigned count = 3;
    std::string tolerance;          // as --tolerance reads it; "": the defaults
    std::string calibrationSha256;  // the calibration the run says it replayed with; "": none
    ProgramCheck programCheck = ProgramCheck::Matched;
    std::uint64_t divergedAt = UINT64_MAX;  // a transaction stored as diverged
    // Stores this shard index's part of the plan while marking the run with its own index
    // (a shard holding another shard's results).
    std::optional<unsigned> partOf;
    RunStatus status = RunStatus::Finished;
};

// Writes shard `index` of `casePath`'s only tape into the new case `shardPath`: every
// transaction of its part of the plan exact, but `divergedAt`. Throws on failure.
void writeMadeUpShard(const std::string& casePath, const std::string& shardPath, unsigned index, const MadeUpShard& options = {});

// Records in `casePath` the planned audit that made-up shards of `options` are shards of (as
// slurm-script records one, but with `options`' program check and calibration digest); returns
// its id.
std::int64_t recordMadeUpPlan(const std::string& casePath, const MadeUpShard& options = {});

}  // namespace zkdv::test
