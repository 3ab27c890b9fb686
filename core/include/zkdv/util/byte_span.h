#pragma once
// A non-owning view of bytes (C++17 has no std::span).

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace zkdv {

struct ByteSpan {
    const std::uint8_t* data = nullptr;
    std::size_t size = 0;

    ByteSpan() = default;
    ByteSpan(const std::uint8_t* d, std::size_t n) : data(d), size(n) {}
    ByteSpan(const void* d, std::size_t n) : data(static_cast<const std::uint8_t*>(d)), size(n) {}
    ByteSpan(const std::vector<std::uint8_t>& v) : data(v.data()), size(v.size()) {}  // NOLINT: implicit on purpose
    explicit ByteSpan(std::string_view s) : data(reinterpret_cast<const std::uint8_t*>(s.data())), size(s.size()) {}

    bool empty() const { return size == 0; }
    const std::uint8_t* begin() const { return data; }
    const std::uint8_t* end() const { return data + size; }
    // Caller guarantees offset + length <= size.
    ByteSpan sub(std::size_t offset, std::size_t length) const { return ByteSpan(data + offset, length); }
    ByteSpan sub(std::size_t offset) const { return ByteSpan(data + offset, size - offset); }
    std::string_view asString() const { return std::string_view(reinterpret_cast<const char*>(data), size); }
};

}  // namespace zkdv
