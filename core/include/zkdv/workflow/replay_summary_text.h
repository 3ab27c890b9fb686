#pragma once
// What a finished replay says in words, the same on zkdv-audit replay's stdout and in the
// workstation's status bar: its verdict (one word per run status), the counts, and why.

#include <string>
#include <vector>

#include "zkdv/replay/replay_runner.h"

namespace zkdv {

// "passed", "FAILED", "INCOMPLETE (stopped)", "INCOMPLETE (failed)", …: one word per outcome.
std::string replayVerdictWord(const ReplaySummary& summary);

// The headline: "replay run 3 of tape 1 on cpu: passed — random:10, seed 42 (drawn at audit
// time): 10 of 40 transactions selected, 12 replayed in 1.52 s".
std::string replaySummaryHeadline(const ReplaySummary& summary);

// The lines under it: the verdict counts, the run-wide problem, the kernel profile, the
// numeric regime and the first failures.
std::vector<std::string> replaySummaryDetails(const ReplaySummary& summary);

}  // namespace zkdv
