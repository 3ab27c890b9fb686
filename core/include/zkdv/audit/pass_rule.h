#pragma once
// When a replay run passes: the one rule a replay's summary (zkdv-audit replay's exit status)
// and a stored run (zkdv-audit info) are judged by.

#include <cstdint>

#include "zkdv/audit/run_status.h"

namespace zkdv {

// The run finished and no transaction it replayed diverged or was unverifiable. (The report's
// conclusion asks more, of the tape rather than the run: that something was replayed and
// that the tape is sealed.)
inline bool replayRunPassed(RunStatus status, std::uint64_t diverged, std::uint64_t unverifiable)
{
    return status == RunStatus::Finished && diverged == 0 && unverifiable == 0;
}

// The run found the tape at fault, finished or not: a transaction diverged, or the trainer's
// own program or tape made one unreplayable within the auditor's limits (`trainersFailures`,
// the unverifiable transactions whose cause blamesTrainer()). A run that did not pass and did
// not fail neither confirms nor refutes the tape.
// A run that passed (replayRunPassed) with every replayed transaction bit for bit: the only
// run that says "passed"; one that needed a tolerance says "consistent within rounding".
inline bool replayRunBitForBit(RunStatus status, std::uint64_t diverged, std::uint64_t unverifiable, std::uint64_t withinTolerance)
{
    return replayRunPassed(status, diverged, unverifiable) && withinTolerance == 0;
}

inline bool replayRunFailed(std::uint64_t diverged, std::uint64_t trainersFailures)
{
    return diverged > 0 || trainersFailures > 0;
}

}  // namespace zkdv
