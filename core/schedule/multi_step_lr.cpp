// MultiStepLR: port of torch.optim.lr_scheduler.MultiStepLR.get_lr() (chainable), the same in
// torch 1.13 and 2.x. Torch keeps the milestones in a Counter: at an epoch listed n times the
// rate is multiplied by gamma ** n. A float gamma takes Python's float power (C's pow); an int
// gamma Python's exact integer power, converted to a double once.

#include <cmath>
#include <map>

#include "lr_schedule.h"
#include "python_arithmetic.h"

namespace zkdv::schedule {

namespace {

class MultiStepLR : public LrSchedule {
public:
    explicit MultiStepLR(const ScheduleArguments& a) : LrSchedule(a, usesPow(a)), gamma_(a.number("gamma"))
    {
        for (const PythonNumber& milestone : a.numbers("milestones")) {
            if (isEpoch(milestone))
                ++counts_[static_cast<std::uint64_t>(milestone.asDouble())];
            if (milestone.asDouble() <= 0.0)
                ++atOrBelowZero_;
        }
        // A negative or fractional milestone is a Counter key no last_epoch ever equals; 2 and
        // 2.0 are one key, as in Python.
    }

protected:
    double lr(std::uint64_t epoch, double current, double) const override
    {
        const auto it = counts_.find(epoch);
        if (it == counts_.end())
            return current;
        return current * factor(it->second, epoch);
    }

    // base * gamma ** bisect_right(sorted milestones, 0): every milestone at or below 0 counts,
    // a negative or fractional one too.
    double restartLr(double base) const override
    {
        return atOrBelowZero_ == 0 ? base : base * factor(atOrBelowZero_, 0);
    }

private:
    static bool isEpoch(const PythonNumber& n)
    {
        const double v = n.asDouble();
        return v >= 0.0 && v < 18446744073709551616.0 && std::floor(v) == v;
    }

    // Only a milestone listed more than once raises a float gamma to a power other than 1,
    // which every C library computes exactly.
    static bool usesPow(const ScheduleArguments& a)
    {
        if (a.number("gamma").isInteger())
            return false;
        std::map<double, int> counts;
        for (const PythonNumber& milestone : a.numbers("milestones"))
            if (++counts[milestone.asDouble()] > 1)
                return true;
        return false;
    }

    double factor(std::uint64_t count, std::uint64_t epoch) const
    {
        if (!gamma_.isInteger())
            return pythonPower(gamma_.asDouble(), static_cast<double>(count), where(epoch));
        // Python's int ** int is exact; it meets the float rate converted to a double.
        // Exact in 128 bits for every sane case; past that, pow (which may round apart).
        const std::int64_t g = gamma_.asInteger();
        const unsigned __int128 magnitude = static_cast<unsigned __int128>(g < 0 ? -static_cast<__int128>(g) : g);
        unsigned __int128 power = 1;
        for (std::uint64_t i = 0; i < count; ++i) {
            if (magnitude > 1 && power > (~static_cast<unsigned __int128>(0)) / magnitude)
                return pythonPower(static_cast<double>(g), static_cast<double>(count), where(epoch));
            power *= magnitude;
            if (magnitude <= 1)
                break;
        }
        const double value = static_cast<double>(power);
        return (g < 0 && count % 2 == 1) ? -value : value;
    }

    PythonNumber gamma_;
    std::map<std::uint64_t, std::uint64_t> counts_;
    std::uint64_t atOrBelowZero_ = 0;
};

}  // namespace

std::unique_ptr<LrSchedule> makeMultiStepLR(const ScheduleArguments& a) { return std::make_unique<MultiStepLR>(a); }

}  // namespace zkdv::schedule
