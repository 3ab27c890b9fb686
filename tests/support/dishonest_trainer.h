#pragma once
// A dishonest trainer for the tests: rewrites a tape with altered record payloads and
// re-chains and re-seals it, so the tape verifies and only a replay can tell.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "zkdv/tape/dtype.h"
#include "zkdv/tape/tape_format.h"

namespace zkdv::test {

struct RawRecord {
    tape::RecordType type;
    std::vector<std::uint8_t> payload;
};

// What the rewrite does about the sampled checks' draws of a chain-bound tape (format 1.3),
// which a changed record re-draws for every later transaction.
enum class Draws {
    // Like a forger: before writing the root and each transaction record, search its free
    // bytes (a space after the root's JSON, the transaction's wall_time_ns) for a digest that
    // draws the checks the next transaction carries, so every draw holds again.
    Regrind,
    // Re-chain only: the draws fall where they fall.
    Leave,
};

struct RewriteStatistics {
    std::uint64_t digestsTried = 0;  // record digests computed in the search, beyond one per record
};

// Copies the sealed tape `from` to `to` (in the same format version), passing every record
// (root, program, snapshots, transactions, in order) through `alter` first. Throws
// zkdv::Error when `from` is not sealed.
// `sealSignature`: the JSON the new seal's signature member holds (spec 7.1): a forger may
// keep the original tape's signature, or put any other there.
RewriteStatistics rewriteTape(const std::string& from, const std::string& to, const std::function<void(RawRecord&)>& alter,
                              Draws draws = Draws::Regrind, const std::string& sealSignature = "null");

bool isTransaction(const RawRecord& record, std::uint64_t index);
bool isSnapshot(const RawRecord& record, std::uint64_t beforeTransaction);
// Scales one float32 element of tensor `name` in a safetensors payload in place (a zero
// becomes 0.25, so the change always shows). Throws zkdv::Error when there is no such F32 tensor.
void scaleElement(RawRecord& record, const std::string& name, std::size_t element, float factor);

// A safetensors payload taken apart, to be edited and put back with writePayload().
struct PayloadTensor {
    std::string name;
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;
    std::vector<std::uint8_t> bytes;
};
struct Payload {
    std::map<std::string, std::string> metadata;
    std::vector<PayloadTensor> tensors;
};
Payload readPayload(const RawRecord& record);
void writePayload(RawRecord& record, const Payload& payload);

}  // namespace zkdv::test
