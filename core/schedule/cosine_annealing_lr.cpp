// CosineAnnealingLR: port of torch.optim.lr_scheduler.CosineAnnealingLR.get_lr(), the
// chainable form, which steps each rate from its current value by a ratio of cosines; the
// closed form (_get_closed_form_lr, used by step(epoch)) rounds differently. Where the ratio's
// denominator is 1 + cos(pi) torch adds the half-cycle's increment instead. Torch 1.13 tests
// last_epoch == 0 and 2.x _is_initial, which agree for a scheduler made fresh; the resume
// branch (_step_count == 1 and last_epoch > 0) never applies to one.

#include <cmath>

#include "lr_schedule.h"
#include "python_arithmetic.h"

namespace zkdv::schedule {

namespace {

class CosineAnnealingLR : public LrSchedule {
public:
    explicit CosineAnnealingLR(const ScheduleArguments& a) : LrSchedule(a, true), tMax_(a.number("T_max")), etaMin_(a.real("eta_min"))
    {
        // Torch's constructor takes 0, but its first step after the constructor's divides by it.
        if (tMax_.isZero())
            a.refuse("T_max", "a non-zero number (torch's first step takes a modulo by 2 * T_max)");
    }

protected:
    double lr(std::uint64_t epoch, double current, double base) const override
    {
        if (epoch == 0)
            return current;
        const StepPlace at = where(epoch);
        const double tMax = tMax_.asDouble();
        if (atHalfCycle(epoch, at))
            return current + (base - etaMin_) * (1.0 - std::cos(pythonDivide(kPythonPi, tMax, at))) / 2.0;
        const double now = pythonDivide(kPythonPi * static_cast<double>(epoch), tMax, at);
        const double before = pythonDivide(kPythonPi * static_cast<double>(epoch - 1), tMax, at);
        return pythonDivide(1.0 + std::cos(now), 1.0 + std::cos(before), at) * (current - etaMin_) + etaMin_;
    }

    // eta_min + (base - eta_min) * (1 + cos(pi * 0 / T_max)) / 2, which need not round back to base.
    double restartLr(double base) const override
    {
        const double angle = pythonDivide(kPythonPi * 0.0, tMax_.asDouble(), where(0));
        return etaMin_ + (base - etaMin_) * (1.0 + std::cos(angle)) / 2.0;
    }

private:
    // Python's (last_epoch - 1 - T_max) % (2 * T_max) == 0: in integers for an int T_max (exact
    // for every epoch), in doubles for a float one (the int last_epoch - 1 converted first).
    bool atHalfCycle(std::uint64_t epoch, StepPlace at) const
    {
        if (tMax_.isInteger()) {
            const __int128 t = tMax_.asInteger();
            return (static_cast<__int128>(epoch) - 1 - t) % (2 * t) == 0;
        }
        return pythonModuloIsZero(static_cast<double>(epoch - 1) - tMax_.asDouble(), 2.0 * tMax_.asDouble(), at);
    }

    PythonNumber tMax_;
    double etaMin_;
};

}  // namespace

std::unique_ptr<LrSchedule> makeCosineAnnealingLR(const ScheduleArguments& a) { return std::make_unique<CosineAnnealingLR>(a); }

}  // namespace zkdv::schedule
