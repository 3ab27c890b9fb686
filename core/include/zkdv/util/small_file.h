#pragma once
// Whole small files (signatures, attestations, commitments' neighbours) read into memory with a
// bound, since they come from untrusted hands and a huge one must not exhaust memory.

#include <cstdint>
#include <string>

namespace zkdv {

// The file's bytes. Throws IoError naming `path` when it cannot be read, FormatError when it is
// larger than `maxBytes` (saying what it should have been: `what`).
std::string readSmallFile(const std::string& path, std::uint64_t maxBytes, const std::string& what);

}  // namespace zkdv
