#include "python_number.h"

#include <cmath>

namespace zkdv::schedule {

namespace {

constexpr double kTwoTo64 = 18446744073709551616.0;

}  // namespace

bool PythonNumber::equalsEpoch(std::uint64_t epoch) const
{
    if (integer_)
        return intValue_ >= 0 && static_cast<std::uint64_t>(intValue_) == epoch;
    if (!(doubleValue_ >= 0.0 && doubleValue_ < kTwoTo64) || std::floor(doubleValue_) != doubleValue_)
        return false;
    return static_cast<std::uint64_t>(doubleValue_) == epoch;
}

bool PythonNumber::isBelowEpoch(std::uint64_t epoch) const
{
    if (integer_)
        return intValue_ < 0 || static_cast<std::uint64_t>(intValue_) < epoch;
    if (doubleValue_ < 0.0)
        return true;
    if (doubleValue_ >= kTwoTo64)
        return false;
    // For x >= 0, an integer e exceeds x exactly when it exceeds floor(x).
    return static_cast<std::uint64_t>(std::floor(doubleValue_)) < epoch;
}

}  // namespace zkdv::schedule
