#pragma once
// Why a replay of a tape could verify nothing, said before it starts (the workstation asks
// whether to go on, zkdv-audit replay warns): a program that cannot be re-executed, or one
// that neither the case nor the command line supplies.

#include <string>

namespace zkdv {

struct CaseTape;

// "" when a replay can compare transactions with the tape; `programSupplied`: a program file
// was given for this replay (zkdv-audit replay --program).
std::string whyReplayVerifiesNothing(const CaseTape& tape, bool programSupplied = false);

}  // namespace zkdv
