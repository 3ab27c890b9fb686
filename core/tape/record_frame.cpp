#include "zkdv/tape/record_frame.h"

#include <cstring>

#include "zkdv/util/crc32.h"
#include "zkdv/util/little_endian.h"

namespace zkdv {

FrameHeader frameHeader(std::uint32_t type, std::uint32_t flags, std::uint64_t payloadLength, const Digest& previous)
{
    FrameHeader header{};
    writeLittleEndian<std::uint32_t>(header.data(), type);
    writeLittleEndian<std::uint32_t>(header.data() + 4, flags);
    writeLittleEndian<std::uint64_t>(header.data() + 8, payloadLength);
    writeLittleEndian<std::uint32_t>(header.data() + 16, crc32(ByteSpan(header.data(), 16)));
    std::memcpy(header.data() + 24, previous.data(), previous.size());
    return header;
}

Digest frameDigest(const FrameHeader& header, const std::vector<ByteSpan>& pieces, Sha256& hasher)
{
    static const std::uint8_t zeros[8] = {};
    const std::uint64_t length = readLittleEndian<std::uint64_t>(header.data() + 8);
    hasher.update(ByteSpan(header.data(), header.size()));
    for (const ByteSpan& piece : pieces)
        hasher.update(piece);
    hasher.update(ByteSpan(zeros, tape::paddingFor(length)));
    return hasher.finish();
}

Digest genesisDigest(std::uint16_t major, std::uint16_t minor)
{
    std::uint8_t header[tape::kFileHeaderSize] = {};
    std::memcpy(header, tape::kMagic, sizeof tape::kMagic);
    writeLittleEndian<std::uint16_t>(header + 8, major);
    writeLittleEndian<std::uint16_t>(header + 10, minor);
    return Sha256::of(ByteSpan(header, sizeof header));
}

}  // namespace zkdv
