#pragma once
// CSV as every ZKDV export writes it (RFC 4180): fields quoted when they hold a comma, quote
// or line break, text made valid UTF-8, numbers round-trip exact, CRLF line ends.

#include <string>

namespace zkdv {

std::string csvField(const std::string& text);
// "%.17g"; "nan", "inf", "-inf" for the values without a decimal form.
std::string csvNumber(double value);
inline constexpr const char* kCsvLineEnd = "\r\n";

}  // namespace zkdv
