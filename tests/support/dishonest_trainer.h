#pragma once
// A dishonest trainer for the tests: rewrites a tape with altered record payloads and
// re-chains and re-seals it, so the tape verifies and only a replay can tell.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "zkdv/tape/tape_format.h"

namespace zkdv::test {

struct RawRecord {
    tape::RecordType type;
    std::vector<std::uint8_t> payload;
};

// Copies the sealed tape `from` to `to`, passing every record (root, program, snapshots,
// transactions, in order) through `alter` first. Throws zkdv::Error when `from` is not sealed.
void rewriteTape(const std::string& from, const std::string& to, const std::function<void(RawRecord&)>& alter);

bool isTransaction(const RawRecord& record, std::uint64_t index);
bool isSnapshot(const RawRecord& record, std::uint64_t beforeTransaction);
// Scales one float32 element of tensor `name` in a safetensors payload in place (a zero
// becomes 0.25, so the change always shows). Throws zkdv::Error when there is no such F32 tensor.
void scaleElement(RawRecord& record, const std::string& name, std::size_t element, float factor);

}  // namespace zkdv::test
