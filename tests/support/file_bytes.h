#pragma once
// Whole files as bytes or text, for tests that copy, damage or compare them. A file that
// cannot be read or written completely throws, naming it: a test never goes on with an empty
// or half-written fixture.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace zkdv::test {

// Every byte of `path`; throws std::runtime_error when it cannot be opened or read.
std::vector<std::uint8_t> readAll(const std::string& path);
std::string readText(const std::string& path);

// Replaces `path` with the first `length` bytes of `bytes` (all of them without `length`);
// throws std::runtime_error when `length` exceeds them or the file cannot be created, written
// or closed (a full disk included).
void writeAll(const std::string& path, const std::vector<std::uint8_t>& bytes, std::size_t length);
void writeAll(const std::string& path, const std::vector<std::uint8_t>& bytes);
void writeText(const std::string& path, const std::string& text);

}  // namespace zkdv::test
