#include "json_scanner.h"

#include <cstdio>

#include "zkdv/util/error.h"

namespace zkdv::detail {

namespace {

constexpr std::size_t kMessageTextLimit = 64;

int hexValue(std::uint8_t c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

void appendUtf8(std::string& out, unsigned codePoint)
{
    if (codePoint < 0x80) {
        out.push_back(static_cast<char>(codePoint));
    } else if (codePoint < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (codePoint >> 6)));
        out.push_back(static_cast<char>(0x80 | (codePoint & 0x3F)));
    } else if (codePoint < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (codePoint >> 12)));
        out.push_back(static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (codePoint & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (codePoint >> 18)));
        out.push_back(static_cast<char>(0x80 | ((codePoint >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (codePoint & 0x3F)));
    }
}

std::string describeByte(const std::uint8_t* at, const std::uint8_t* end)
{
    if (at >= end)
        return "the end of the header";
    char buffer[16];
    if (*at >= 0x21 && *at < 0x7F)
        std::snprintf(buffer, sizeof buffer, "'%c'", static_cast<char>(*at));
    else
        std::snprintf(buffer, sizeof buffer, "byte 0x%02X", static_cast<unsigned>(*at));
    return buffer;
}

}  // namespace

void JsonScanner::fail(std::string_view expected) const
{
    failAt(cur_, expected);
}

void JsonScanner::failAt(const std::uint8_t* where, std::string_view expected) const
{
    std::string message = "expected ";
    message.append(expected);
    message += ", found ";
    message += describeByte(where, end_);
    throw FormatError(message, base_ + static_cast<std::uint64_t>(where - begin_));
}

std::string JsonScanner::quoteForMessage(std::string_view text)
{
    std::string quoted = "\"";
    std::size_t shown = 0;
    for (std::size_t i = 0; i < text.size() && shown < kMessageTextLimit; ++i, ++shown) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x20 || c == 0x7F) {
            char buffer[8];
            std::snprintf(buffer, sizeof buffer, "\\x%02X", static_cast<unsigned>(c));
            quoted += buffer;
        } else {
            quoted.push_back(static_cast<char>(c));
        }
    }
    if (shown < text.size()) {
        // Never cut a multi-byte character in half: the message itself stays valid UTF-8.
        while (!quoted.empty() && (static_cast<unsigned char>(quoted.back()) & 0xC0) == 0x80)
            quoted.pop_back();
        if (!quoted.empty() && static_cast<unsigned char>(quoted.back()) >= 0xC0)
            quoted.pop_back();
        quoted += "...";
    }
    quoted += '"';
    return quoted;
}

unsigned JsonScanner::readHexQuad(const std::uint8_t* at) const
{
    unsigned value = 0;
    for (int i = 0; i < 4; ++i) {
        const int digit = at + i < end_ ? hexValue(at[i]) : -1;
        if (digit < 0)
            failAt(at + i, "four hexadecimal digits after \\u");
        value = value << 4 | static_cast<unsigned>(digit);
    }
    return value;
}

void JsonScanner::readStringSlowly(std::string& out)
{
    out.clear();
    const std::uint8_t* p = cur_ + 1;
    for (;;) {
        const std::uint8_t* run = p;
        while (p < end_ && kPlainBytes.table[*p])
            ++p;
        out.append(reinterpret_cast<const char*>(run), static_cast<std::size_t>(p - run));
        if (p == end_)
            failAt(p, "a closing '\"'");
        const std::uint8_t c = *p;
        if (c == '"') {
            cur_ = p + 1;
            return;
        }
        if (c < 0x20)
            failAt(p, "a string character (control characters must be escaped)");
        if (c >= 0x80) {
            const std::size_t length = utf8SequenceLength(p, static_cast<std::size_t>(end_ - p));
            if (length == 0)
                failAt(p, "valid UTF-8");
            out.append(reinterpret_cast<const char*>(p), length);
            p += length;
            continue;
        }
        // A backslash.
        if (p + 1 == end_)
            failAt(p + 1, "an escape character after '\\'");
        const std::uint8_t escape = p[1];
        p += 2;
        switch (escape) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
            unsigned codePoint = readHexQuad(p);
            const std::uint8_t* escapeStart = p - 2;
            p += 4;
            if (codePoint >= 0xDC00 && codePoint <= 0xDFFF)
                failAt(escapeStart, "a high surrogate before a low surrogate escape");
            if (codePoint >= 0xD800 && codePoint <= 0xDBFF) {
                if (end_ - p < 2 || p[0] != '\\' || p[1] != 'u')
                    failAt(p, "a \\u low surrogate escape after a high surrogate");
                const unsigned low = readHexQuad(p + 2);
                if (low < 0xDC00 || low > 0xDFFF)
                    failAt(p, "a \\u low surrogate escape after a high surrogate");
                codePoint = 0x10000 + ((codePoint - 0xD800) << 10) + (low - 0xDC00);
                p += 6;
            }
            appendUtf8(out, codePoint);
            break;
        }
        default: failAt(p - 1, "one of \" \\ / b f n r t u after '\\'");
        }
    }
}

std::uint64_t JsonScanner::readUnsignedSlowly(std::uint64_t max, std::string_view expected)
{
    const std::uint8_t* start = cur_;
    if (cur_ == end_ || *cur_ < '0' || *cur_ > '9')
        fail(expected);
    std::uint64_t value = 0;
    if (*cur_ == '0') {
        ++cur_;
        if (cur_ < end_ && *cur_ >= '0' && *cur_ <= '9')
            failAt(start, "an integer without leading zeros");
    } else {
        while (cur_ < end_ && *cur_ >= '0' && *cur_ <= '9') {
            const unsigned digit = *cur_ - '0';
            if (value > (max - digit) / 10)
                failAt(start, std::string(expected) + " no larger than " + std::to_string(max));
            value = value * 10 + digit;
            ++cur_;
        }
    }
    if (cur_ < end_ && (*cur_ == '.' || *cur_ == 'e' || *cur_ == 'E'))
        failAt(start, std::string(expected) + " without fraction or exponent");
    return value;
}

}  // namespace zkdv::detail
