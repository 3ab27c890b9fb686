#pragma once
// Where a case's tapes are: a case refers to each tape by path (unless ingest --embed copied
// every payload), so a tape moved after ingest is found missing when the case is opened, and
// pointed to again at its new place, once it is shown to be the same tape.

#include <cstdint>
#include <string>
#include <vector>

#include "zkdv/store/case_store.h"

namespace zkdv {

class ProgressSink;

// "" when the tape's file is where the case says and has the size it had at ingest, or when
// the case holds every payload itself; otherwise what is wrong, naming the path.
std::string tapeFileProblem(const CaseTape& tape);

// The tapes of the case whose files are missing or changed (tapeFileProblem).
std::vector<CaseTape> misplacedTapes(CaseStore& store);

// Points tape `tapeId` at `newPath` after its file moved. The file is read whole (its hash
// chain checked as at ingest) and must be the same tape: the same chain head and size.
// Throws Error saying what differs; the case is then unchanged.
void relocateTape(CaseStore& store, std::int64_t tapeId, const std::string& newPath, ProgressSink* progress = nullptr);

}  // namespace zkdv
