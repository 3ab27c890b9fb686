#pragma once
// Reading and writing little-endian integers in byte buffers (the tape's byte order).

#include <cstdint>
#include <cstring>

namespace zkdv {

template <typename T>
inline T readLittleEndian(const std::uint8_t* p)
{
    T value = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i)
        value |= static_cast<T>(static_cast<T>(p[i]) << (8 * i));
    return value;
}

template <typename T>
inline void writeLittleEndian(std::uint8_t* p, T value)
{
    for (std::size_t i = 0; i < sizeof(T); ++i)
        p[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(value) >> (8 * i));
}

}  // namespace zkdv
