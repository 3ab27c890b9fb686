#pragma once
// The seal record that closes a complete tape (spec section 7).

#include <cstdint>
#include <string>

#include "zkdv/util/byte_span.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

struct SealRecord {
    std::uint64_t records = 0;
    std::uint64_t transactions = 0;
    std::uint64_t snapshots = 0;
    Digest chainHead{};
    std::string signatureJson = "null";

    static SealRecord parse(ByteSpan payload);
};

}  // namespace zkdv
