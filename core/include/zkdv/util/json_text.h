#pragma once
// JSON text in and out: the one parser for JSON that came from someone else (tape records,
// text stored in a case), bounded in depth, and the one writer of JSON output, which is
// always valid UTF-8.

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace zkdv {

// How deep arrays and objects may nest in a document read from someone else. nlohmann::json
// parses without recursion, but dumping, comparing and copying a document recurse once
// per level, so without a bound a few hundred KB of "[[[[…" exhaust the stack. The deepest
// document ZKDV writes nests 5 levels (root → optimizer → groups → group → options → a
// value's array) and run metadata from training configs rarely passes 10; 64 leaves room
// for any of those and keeps any recursive walk of a document to a few KB of stack, even in
// a worker thread or an instrumented build.
inline constexpr std::size_t kMaxJsonDepth = 64;

// Parses `text` as one JSON document. Throws FormatError when it is not valid JSON (strict
// RFC 8259, UTF-8 checked) or nests deeper than kMaxJsonDepth, saying so with `what` (e.g.
// "root record") and the byte offset of the problem inside `text`.
nlohmann::json parseUntrustedJson(std::string_view text, std::string_view what);

// Serialises a document for output (files, stdout). Strings holding bytes that are not
// UTF-8 (a library's error text, a damaged case) are written with those bytes replaced by
// U+FFFD instead of failing the whole output. indent < 0: one line.
template <typename Json>
std::string toJsonText(const Json& document, int indent = -1)
{
    return document.dump(indent, ' ', false, nlohmann::detail::error_handler_t::replace);
}

}  // namespace zkdv
