#pragma once
// A scheduler argument as Python holds it: an int or a float. Torch's arithmetic follows the
// distinction (an int step_size takes an integer modulo, a float one a float modulo; an
// int's comparison with last_epoch is exact either way), so the contracts keep it. Private
// to core/schedule.

#include <cstdint>

namespace zkdv::schedule {

class PythonNumber {
public:
    // Integers are at most 2^53 in magnitude (ScheduleArguments refuses larger ones), so
    // that every int operand converts to a double exactly, as Python converts it.
    static PythonNumber integer(std::int64_t value) { return PythonNumber(true, value, static_cast<double>(value)); }
    static PythonNumber real(double value) { return PythonNumber(false, 0, value); }

    bool isInteger() const { return integer_; }
    std::int64_t asInteger() const { return intValue_; }
    // What Python's float(x) gives, the operand of int-with-float arithmetic.
    double asDouble() const { return doubleValue_; }
    bool isZero() const { return doubleValue_ == 0.0; }

    // Python's exact comparisons of an int last_epoch with this number, for a float too
    // (Python never rounds the int to compare it).
    bool equalsEpoch(std::uint64_t epoch) const;
    bool isBelowEpoch(std::uint64_t epoch) const;  // epoch > *this

private:
    PythonNumber(bool integer, std::int64_t intValue, double doubleValue) : integer_(integer), intValue_(intValue), doubleValue_(doubleValue) {}

    bool integer_;
    std::int64_t intValue_;
    double doubleValue_;
};

}  // namespace zkdv::schedule
