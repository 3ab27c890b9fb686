#pragma once
// Python's float operations where they differ from C's: Python raises where C returns an
// infinity or a NaN (a division by zero, 0.0 ** -1, an overflowing **). Torch's step raises
// there, so no torch run recorded such a step; the contracts throw ScheduleError instead of
// computing a value a forged tape could copy. Private to core/schedule.

#include <cstdint>
#include <string>

namespace zkdv::schedule {

// The step an error is about ("StepLR at epoch 7"), spelt out only when one is thrown.
struct StepPlace {
    const std::string& kind;
    std::uint64_t epoch;
    std::string text() const { return kind + " at epoch " + std::to_string(epoch); }
};

// Python's math.pi.
constexpr double kPythonPi = 3.141592653589793;

// a / b; throws when b is zero (Python's ZeroDivisionError).
double pythonDivide(double a, double b, StepPlace where);
// Whether Python's a % b is zero (the sign rule of Python's modulo changes only a non-zero
// result); throws when b is zero.
bool pythonModuloIsZero(double a, double b, StepPlace where);
// Python's float ** float: C's pow except where Python raises.
double pythonPower(double base, double exponent, StepPlace where);

}  // namespace zkdv::schedule
