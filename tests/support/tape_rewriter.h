#pragma once
// Writes a copy of a valid tape with some record payloads replaced, chained and framed
// anew: the tape a trainer would have written with those payloads.

#include <cstdint>
#include <functional>
#include <string>

namespace zkdv::test {

// Returns the payload to write for record `index` of type `type` (the original: unchanged).
using PayloadEdit = std::function<std::string(std::uint64_t index, std::uint32_t type, std::string payload)>;

// Copies every record of the sealed or unsealed tape at `from` to a new tape at `to`
// (replaced if it exists), passing each payload through `edit`.
void rewriteTape(const std::string& from, const std::string& to, const PayloadEdit& edit);

}  // namespace zkdv::test
