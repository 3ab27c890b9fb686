#pragma once
// A strict JSON tokenizer over one buffer, for parsers whose document shape is fixed in code.
//
// It never builds a document tree: the caller drives it token by token, so the nesting a
// document may have is exactly the nesting the caller's code walks, and no input can make
// it recurse. Every failure throws FormatError located relative to the enclosing buffer.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "zkdv/util/utf8.h"

namespace zkdv::detail {

// Bytes that may appear unescaped in a string and need no UTF-8 check.
struct PlainBytes {
    bool table[256];
};
constexpr PlainBytes makePlainBytes()
{
    PlainBytes bytes{};
    for (int c = 0x20; c < 0x80; ++c)
        bytes.table[c] = c != '"' && c != '\\';
    return bytes;
}
inline constexpr PlainBytes kPlainBytes = makePlainBytes();

class JsonScanner {
public:
    // `baseOffset` is where `text` starts inside the buffer that error offsets refer to.
    JsonScanner(const std::uint8_t* text, std::size_t size, std::uint64_t baseOffset)
        : begin_(text), cur_(text), end_(text + size), base_(baseOffset)
    {
    }

    std::uint64_t offset() const { return offsetOf(cur_); }
    std::uint64_t offsetOf(const std::uint8_t* at) const { return base_ + static_cast<std::uint64_t>(at - begin_); }

    // Raw access for callers that match a common exact spelling by hand and fall back to
    // the token functions when it does not match.
    const std::uint8_t* cursor() const { return cur_; }
    const std::uint8_t* end() const { return end_; }
    void setCursor(const std::uint8_t* at) { cur_ = at; }
    bool atEnd() const { return cur_ == end_; }
    // The next byte, or -1 at the end of the text.
    int peek() const { return cur_ < end_ ? *cur_ : -1; }

    void skipWhitespace()
    {
        while (cur_ < end_ && isWhitespace(*cur_))
            ++cur_;
    }

    // Skips whitespace, then consumes `c` if it is next.
    bool consumeIf(char c)
    {
        skipWhitespace();
        if (cur_ < end_ && *cur_ == static_cast<std::uint8_t>(c)) {
            ++cur_;
            return true;
        }
        return false;
    }

    // Skips whitespace, then consumes `c` or throws naming `expected`.
    void expect(char c, std::string_view expected)
    {
        if (!consumeIf(c))
            fail(expected);
    }

    // Skips whitespace, then reads a string made only of printable ASCII without escapes,
    // without copying it. Returns false for any other token, having consumed only the
    // whitespace; readString then handles it (or reports it).
    bool readPlainString(std::string_view& out)
    {
        skipWhitespace();
        if (cur_ == end_ || *cur_ != '"')
            return false;
        const std::uint8_t* p = cur_ + 1;
        while (p < end_ && kPlainBytes.table[*p])
            ++p;
        if (p == end_ || *p != '"')
            return false;
        out = std::string_view(reinterpret_cast<const char*>(cur_ + 1), static_cast<std::size_t>(p - cur_ - 1));
        cur_ = p + 1;
        return true;
    }

    // Skips whitespace, then reads one string token, decoding escapes into `out`. The text
    // must be valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF) and
    // \u escapes must pair surrogates, so `out` is always valid UTF-8.
    void readString(std::string& out, std::string_view expected)
    {
        std::string_view plain;
        if (readPlainString(plain)) {
            out.assign(plain);
            return;
        }
        if (cur_ == end_ || *cur_ != '"')
            fail(expected);
        readStringSlowly(out);
    }

    // Skips whitespace, then consumes the raw bytes of `literal` if the text continues with
    // them. Callers use it to recognise the canonical spelling of a token cheaply and fall
    // back to the general reader otherwise.
    template <std::size_t N>
    bool consumeLiteral(const char (&literal)[N])
    {
        skipWhitespace();
        if (static_cast<std::size_t>(end_ - cur_) < N - 1 || std::memcmp(cur_, literal, N - 1) != 0)
            return false;
        cur_ += N - 1;
        return true;
    }

    // Skips whitespace, then reads a JSON number that must be a non-negative integer no
    // larger than `max`; fractions, exponents, signs and leading zeros are refused.
    std::uint64_t readUnsigned(std::uint64_t max, std::string_view expected)
    {
        skipWhitespace();
        // Up to 18 digits cannot overflow 64 bits, so short numbers need no per-digit check.
        const std::uint8_t* p = cur_;
        if (p < end_ && *p >= '1' && *p <= '9') {
            std::uint64_t value = static_cast<std::uint64_t>(*p++ - '0');
            const std::uint8_t* limit = p + std::min<std::size_t>(static_cast<std::size_t>(end_ - p), 17);
            while (p < limit && isDigit(*p))
                value = value * 10 + static_cast<std::uint64_t>(*p++ - '0');
            if (endsInteger(p) && value <= max) {
                cur_ = p;
                return value;
            }
        } else if (p < end_ && *p == '0' && endsInteger(p + 1)) {
            cur_ = p + 1;
            return 0;
        }
        return readUnsignedSlowly(max, expected);
    }

    // Throws "expected <expected>, found <what is at the cursor>".
    [[noreturn]] void fail(std::string_view expected) const;
    [[noreturn]] void failAt(const std::uint8_t* where, std::string_view expected) const;

    // Quotes `text` for an error message: escapes control bytes and shortens long text.
    static std::string quoteForMessage(std::string_view text);

private:
    // The first comparison settles every non-whitespace byte, which is nearly all of them.
    static bool isWhitespace(std::uint8_t c) { return c <= ' ' && (c == ' ' || c == '\n' || c == '\r' || c == '\t'); }
    static bool isDigit(std::uint8_t c) { return c >= '0' && c <= '9'; }
    // True when a valid integer may end right before `p`.
    bool endsInteger(const std::uint8_t* p) const
    {
        return p == end_ || (!isDigit(*p) && *p != '.' && *p != 'e' && *p != 'E');
    }

    void readStringSlowly(std::string& out);
    std::uint64_t readUnsignedSlowly(std::uint64_t max, std::string_view expected);
    unsigned readHexQuad(const std::uint8_t* at) const;

    const std::uint8_t* begin_;
    const std::uint8_t* cur_;
    const std::uint8_t* end_;
    std::uint64_t base_;
};

}  // namespace zkdv::detail
