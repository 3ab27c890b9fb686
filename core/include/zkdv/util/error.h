#pragma once
// Exceptions thrown by the core library: every one says what went wrong and where.

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace zkdv {

// Base of every error the core library throws on purpose.
class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Malformed bytes: a safetensors blob, a tape record, a JSON document.
// offset() is the byte offset of the problem inside the buffer that was parsed, when one is
// known; an error about a missing or inconsistent value as a whole has none, and its message
// carries no "(at byte N)" suffix rather than a made-up byte 0.
class FormatError : public Error {
public:
    explicit FormatError(const std::string& message) : Error(message), detail_(message) {}
    FormatError(const std::string& message, std::uint64_t offset)
        : Error(message + " (at byte " + std::to_string(offset) + ")"), offset_(offset), detail_(message) {}
    std::optional<std::uint64_t> offset() const { return offset_; }
    // The message without the location suffix, for callers that add a location of their own.
    const std::string& detail() const { return detail_; }

private:
    std::optional<std::uint64_t> offset_;
    std::string detail_;
};

// A failing operating-system call (open, mmap, write…), with the path it concerned.
class IoError : public Error {
public:
    using Error::Error;
};

}  // namespace zkdv
