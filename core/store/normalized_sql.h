#pragma once
// SQL text reduced to its tokens, so that two definitions that differ only in whitespace,
// comments, identifier quoting or letter case compare equal (SQLite rewrites the text it keeps
// in sqlite_master on ALTER TABLE, and quotes differently across its versions).

#include <string>
#include <string_view>

namespace zkdv {

// Tokens separated by single spaces: words and quoted identifiers in lower case without their
// quotes, string and blob literals verbatim, every other character on its own.
std::string normalizedSql(std::string_view sql);

}  // namespace zkdv
