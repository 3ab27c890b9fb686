#pragma once
// UTF-8 well-formedness: the check the tape parsers apply to every string they read, and
// the repair applied to text that came from elsewhere (library error messages, a case file
// from someone else) before it is written out as JSON, CSV or HTML.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace zkdv {

// Length of the well-formed UTF-8 sequence starting at `p` (at most `available` bytes, at
// least one), or 0 when the bytes there are not one: no overlong forms, no UTF-16
// surrogates, nothing past U+10FFFF.
std::size_t utf8SequenceLength(const std::uint8_t* p, std::size_t available);

// True when all of `text` is well-formed UTF-8.
bool isValidUtf8(std::string_view text);

// `text` with what is not well-formed replaced by U+FFFD, one for each maximal subpart (the
// longest start of a sequence that breaks off, or a stray byte), as Unicode recommends and
// nlohmann::json's error_handler_t::replace does, so text and JSON output agree. Valid text
// comes back unchanged.
std::string toValidUtf8(std::string_view text);

}  // namespace zkdv
