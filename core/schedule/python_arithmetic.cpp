#include "python_arithmetic.h"

#include <cmath>

#include "zkdv/schedule/schedule_contract.h"

namespace zkdv::schedule {

double pythonDivide(double a, double b, StepPlace where)
{
    if (b == 0.0)
        throw ScheduleError(where.text() + ": torch's step divides by zero there (Python raises ZeroDivisionError), so no torch run has this step");
    return a / b;
}

bool pythonModuloIsZero(double a, double b, StepPlace where)
{
    if (b == 0.0)
        throw ScheduleError(where.text() + ": torch's step takes a modulo by zero there (Python raises ZeroDivisionError), so no torch run has this step");
    return std::fmod(a, b) == 0.0;
}

double pythonPower(double base, double exponent, StepPlace where)
{
    if (exponent == 0.0)
        return 1.0;
    if (base == 0.0 && exponent < 0.0)
        throw ScheduleError(where.text() + ": torch's step raises 0.0 to a negative power there (Python raises ZeroDivisionError), so no torch run has this step");
    if (base < 0.0 && std::floor(exponent) != exponent)
        throw ScheduleError(where.text() + ": torch's step raises a negative number to a fractional power there (Python raises ValueError), so no torch run has this step");
    const double result = std::pow(base, exponent);
    if (std::isinf(result) && std::isfinite(base) && std::isfinite(exponent))
        throw ScheduleError(where.text() + ": torch's step overflows a power there (Python raises OverflowError), so no torch run has this step");
    return result;
}

}  // namespace zkdv::schedule
