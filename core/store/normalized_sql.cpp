#include "normalized_sql.h"

#include <cctype>

namespace zkdv {

namespace {

bool isWordChar(unsigned char c) { return std::isalnum(c) || c == '_' || c == '$' || c >= 0x80; }

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

}  // namespace

std::string normalizedSql(std::string_view sql)
{
    std::string out;
    auto startToken = [&] {
        if (!out.empty())
            out += ' ';
    };
    std::size_t i = 0;
    const std::size_t n = sql.size();
    while (i < n) {
        const char c = sql[i];
        if (std::isspace(static_cast<unsigned char>(c))) {
            ++i;
        } else if (c == '-' && i + 1 < n && sql[i + 1] == '-') {
            while (i < n && sql[i] != '\n')
                ++i;
        } else if (c == '/' && i + 1 < n && sql[i + 1] == '*') {
            const std::size_t end = sql.find("*/", i + 2);
            i = end == std::string_view::npos ? n : end + 2;
        } else if (c == '\'') {  // a string literal, '' inside it being a quote
            startToken();
            out += c;
            for (++i; i < n; ++i) {
                out += sql[i];
                if (sql[i] == '\'') {
                    if (i + 1 < n && sql[i + 1] == '\'') {
                        out += sql[++i];
                        continue;
                    }
                    ++i;
                    break;
                }
            }
        } else if (c == '"' || c == '`' || c == '[') {  // a quoted identifier
            const char close = c == '[' ? ']' : c;
            std::string name;
            for (++i; i < n; ++i) {
                if (sql[i] == close) {
                    if (close != ']' && i + 1 < n && sql[i + 1] == close) {
                        name += lower(sql[++i]);
                        continue;
                    }
                    ++i;
                    break;
                }
                name += lower(sql[i]);
            }
            // A name that could be written bare is; one that could not keeps its quotes, so
            // that "a b" does not read as the two words a b.
            bool bare = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
            for (char k : name)
                bare = bare && isWordChar(static_cast<unsigned char>(k)) && k != '"';
            startToken();
            out += bare ? name : "\"" + name + "\"";
        } else if (isWordChar(static_cast<unsigned char>(c))) {
            startToken();
            while (i < n && isWordChar(static_cast<unsigned char>(sql[i])))
                out += lower(sql[i++]);
        } else {
            startToken();
            out += c;
            ++i;
        }
    }
    return out;
}

}  // namespace zkdv
