#include "zkdv/util/utf8.h"

namespace zkdv {

namespace {
// The longest start of a well-formed sequence at `p` (at least its first byte), where no
// whole sequence is: the "maximal subpart" that one U+FFFD replaces.
std::size_t maximalSubpart(const std::uint8_t* p, std::size_t available)
{
    const std::uint8_t lead = p[0];
    std::size_t needed = 0;
    std::uint8_t low = 0x80, high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
        needed = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        needed = 3;
        low = lead == 0xE0 ? 0xA0 : 0x80;
        high = lead == 0xED ? 0x9F : 0xBF;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        needed = 4;
        low = lead == 0xF0 ? 0x90 : 0x80;
        high = lead == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 1;
    }
    std::size_t length = 1;
    if (length < available && p[1] >= low && p[1] <= high)
        for (++length; length < needed && length < available && (p[length] & 0xC0) == 0x80;)
            ++length;
    return length;
}
}  // namespace

std::size_t utf8SequenceLength(const std::uint8_t* p, std::size_t available)
{
    const auto continuation = [](std::uint8_t b) { return (b & 0xC0) == 0x80; };
    const std::uint8_t lead = p[0];
    if (lead < 0x80)
        return 1;
    // The second byte's range is narrowed for E0/F0 (overlong forms), ED (UTF-16
    // surrogates) and F4 (past U+10FFFF); C0, C1 and F5..FF never start a sequence.
    if (lead >= 0xC2 && lead <= 0xDF)
        return available >= 2 && continuation(p[1]) ? 2 : 0;
    if (lead >= 0xE0 && lead <= 0xEF) {
        if (available < 3)
            return 0;
        const std::uint8_t low = lead == 0xE0 ? 0xA0 : 0x80;
        const std::uint8_t high = lead == 0xED ? 0x9F : 0xBF;
        return p[1] >= low && p[1] <= high && continuation(p[2]) ? 3 : 0;
    }
    if (lead >= 0xF0 && lead <= 0xF4) {
        if (available < 4)
            return 0;
        const std::uint8_t low = lead == 0xF0 ? 0x90 : 0x80;
        const std::uint8_t high = lead == 0xF4 ? 0x8F : 0xBF;
        return p[1] >= low && p[1] <= high && continuation(p[2]) && continuation(p[3]) ? 4 : 0;
    }
    return 0;
}

bool isValidUtf8(std::string_view text)
{
    const auto* p = reinterpret_cast<const std::uint8_t*>(text.data());
    const auto* end = p + text.size();
    while (p < end) {
        const std::size_t length = utf8SequenceLength(p, static_cast<std::size_t>(end - p));
        if (length == 0)
            return false;
        p += length;
    }
    return true;
}

std::string toValidUtf8(std::string_view text)
{
    if (isValidUtf8(text))
        return std::string(text);
    static constexpr char kReplacement[] = "\xEF\xBF\xBD";
    std::string out;
    out.reserve(text.size() + 8);
    const auto* p = reinterpret_cast<const std::uint8_t*>(text.data());
    const auto* end = p + text.size();
    while (p < end) {
        const std::size_t length = utf8SequenceLength(p, static_cast<std::size_t>(end - p));
        if (length == 0) {
            out += kReplacement;
            p += maximalSubpart(p, static_cast<std::size_t>(end - p));
        } else {
            out.append(reinterpret_cast<const char*>(p), length);
            p += length;
        }
    }
    return out;
}

}  // namespace zkdv
