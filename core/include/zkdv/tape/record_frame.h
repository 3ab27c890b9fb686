#pragma once
// A record's frame header and digest (spec section 2.2), built the one way the writer and
// every re-check of an embedded payload build them.

#include <array>
#include <cstdint>
#include <vector>

#include "zkdv/tape/tape_format.h"
#include "zkdv/util/byte_span.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

using FrameHeader = std::array<std::uint8_t, tape::kFrameHeaderSize>;

FrameHeader frameHeader(std::uint32_t type, std::uint32_t flags, std::uint64_t payloadLength, const Digest& previous);
// SHA-256 of header, payload pieces and padding: the record's digest.
Digest frameDigest(const FrameHeader& header, const std::vector<ByteSpan>& pieces, Sha256& hasher);
// The digest of the 16-byte file header of a tape of this version: record 0's previous digest.
Digest genesisDigest(std::uint16_t major, std::uint16_t minor);

}  // namespace zkdv
