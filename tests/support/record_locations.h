#pragma once
// Where each record of a tape sits (index, type, frame offset and size, digest), read with
// the one tape reader: for tests that pick a record by type and damage or dissect it.

#include <string>
#include <vector>

#include "zkdv/tape/tape_scanner.h"

namespace zkdv::test {

// Every valid record of the tape at `path`, in file order; the payload views keep their size
// but no data (they live only during the scan: the bytes are at offset + kFrameHeaderSize in
// the file); `summary`, when given, gets the scan's summary.
std::vector<RecordLocation> recordLocations(const std::string& path, TapeSummary* summary = nullptr);

}  // namespace zkdv::test
