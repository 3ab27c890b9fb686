#pragma once
// The state digest of spec section 8: one SHA-256 over the full state in canonical order.

#include <cstdint>
#include <string_view>
#include <vector>

#include "zkdv/tape/dtype.h"
#include "zkdv/util/byte_span.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

class StateDigest {
public:
    // Call once per tensor, in canonical state order, with contiguous little-endian data.
    void add(std::string_view name, DType dtype, const std::vector<std::int64_t>& shape, ByteSpan data);
    Digest finish() { return hasher_.finish(); }

private:
    Sha256 hasher_;
};

}  // namespace zkdv
