// StepLR: port of torch.optim.lr_scheduler.StepLR.get_lr() (chainable), the same in torch
// 1.13 and 2.x: the rate is multiplied by gamma at every non-zero epoch that step_size
// divides. An int step_size takes Python's integer modulo, a float one its float modulo.

#include <cmath>

#include "lr_schedule.h"

namespace zkdv::schedule {

namespace {

class StepLR : public LrSchedule {
public:
    explicit StepLR(const ScheduleArguments& a) : LrSchedule(a, false), stepSize_(a.number("step_size")), gamma_(a.real("gamma"))
    {
        // Torch's constructor takes 0, but its first step after the constructor's divides by it.
        if (stepSize_.isZero())
            a.refuse("step_size", "a non-zero number (torch's first step takes last_epoch modulo step_size)");
    }

protected:
    double lr(std::uint64_t epoch, double current, double) const override
    {
        if (epoch == 0 || !divides(epoch))
            return current;
        return current * gamma_;
    }

    // base * gamma ** (0 // step_size): any power 0 is 1.
    double restartLr(double base) const override { return base; }

private:
    bool divides(std::uint64_t epoch) const
    {
        if (stepSize_.isInteger())
            return epoch % static_cast<std::uint64_t>(std::llabs(stepSize_.asInteger())) == 0;
        // Python's int % float converts the int to a double first.
        return std::fmod(static_cast<double>(epoch), stepSize_.asDouble()) == 0.0;
    }

    PythonNumber stepSize_;
    double gamma_;
};

}  // namespace

std::unique_ptr<LrSchedule> makeStepLR(const ScheduleArguments& a) { return std::make_unique<StepLR>(a); }

}  // namespace zkdv::schedule
