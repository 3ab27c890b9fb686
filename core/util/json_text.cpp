#include "zkdv/util/json_text.h"

#include "zkdv/util/error.h"

namespace zkdv {

namespace {

// Finds the first bracket past the depth limit in one pass, before any tree is built.
// Brackets inside strings do not count; for valid JSON this is its exact nesting depth.
void checkNesting(std::string_view text, std::string_view what)
{
    std::size_t depth = 0;
    bool inString = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (inString) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                inString = false;
            continue;
        }
        switch (c) {
        case '"': inString = true; break;
        case '[':
        case '{':
            if (++depth > kMaxJsonDepth)
                throw FormatError(std::string(what) + " nests JSON arrays and objects more than " + std::to_string(kMaxJsonDepth) +
                                      " levels deep",
                                  i);
            break;
        case ']':
        case '}':
            if (depth > 0)
                --depth;
            break;
        default: break;
        }
    }
}

}  // namespace

nlohmann::json parseUntrustedJson(std::string_view text, std::string_view what)
{
    checkNesting(text, what);
    try {
        return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error& error) {
        throw FormatError(std::string(what) + " is not valid JSON: " + error.what(), error.byte);
    } catch (const nlohmann::json::out_of_range& error) {
        // A number past a double's range (1e400): valid JSON text, but no value to read.
        throw FormatError(std::string(what) + " holds a number no double can hold: " + error.what());
    }
}

}  // namespace zkdv
