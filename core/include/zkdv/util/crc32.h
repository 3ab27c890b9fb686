#pragma once
// CRC-32 (ISO-HDLC, the polynomial of zlib's crc32) for the tape's frame header check.

#include <cstdint>

#include "zkdv/util/byte_span.h"

namespace zkdv {

std::uint32_t crc32(ByteSpan bytes);

}  // namespace zkdv
