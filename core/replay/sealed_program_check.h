#pragma once
// The checks a replay and an element comparison both make before a worker runs anything: the
// sealed program against the tape's commitment, the digest the first snapshot links to, and
// where the workers read the tape's records from. One copy, so the two paths cannot drift.

#include <cstdint>
#include <string>
#include <vector>

#include "zkdv/audit/program_check.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

struct CaseTape;
class ReplayStore;
struct RootRecord;

struct CheckedProgram {
    ProgramCheck check = ProgramCheck::Matched;
    std::vector<std::uint8_t> bytes;  // the program, when Matched
    std::string problem;              // why it cannot run, when not Matched
};

// The program the tape commits to: from `programPath` when given, else from the case.
// Throws ReplayError when `programPath` cannot be read.
CheckedProgram checkSealedProgram(ReplayStore& store, const RootRecord& root, const std::string& programPath = {});

// The digest the first snapshot links to: the program record's, or the root's when the
// program travels apart from the tape.
Digest digestBeforeFirstSnapshot(const CaseTape& tape, const RootRecord& root, const std::vector<std::uint8_t>& program);

// Where the workers read payloads from: the tape file while it is the one ingested
// (`embedded` false), else the case's embedded copies. Returns why neither can serve ("" when
// one can).
std::string chooseRecordSource(const CaseTape& tape, bool& embedded);

}  // namespace zkdv
