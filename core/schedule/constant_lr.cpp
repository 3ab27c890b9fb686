// ConstantLR: port of torch.optim.lr_scheduler.ConstantLR.get_lr() (chainable), the same in
// torch 1.13 and 2.x: the constructor's step multiplies the rate by factor, the step at
// total_iters by 1.0 / factor (rounded on its own first, as Python does).

#include "lr_schedule.h"
#include "python_arithmetic.h"

namespace zkdv::schedule {

namespace {

class ConstantLR : public LrSchedule {
public:
    explicit ConstantLR(const ScheduleArguments& a) : LrSchedule(a, false), factor_(a.real("factor")), totalIters_(a.number("total_iters"))
    {
        if (factor_ > 1.0 || factor_ < 0.0)
            a.refuse("factor", "between 0 and 1 (torch's constructor refuses it)");
    }

protected:
    double lr(std::uint64_t epoch, double current, double) const override
    {
        if (epoch == 0)
            return current * factor_;
        if (!totalIters_.equalsEpoch(epoch))
            return current;
        return current * pythonDivide(1.0, factor_, where(epoch));
    }

    // base * (factor + (0 >= total_iters) * (1 - factor)); False * (1 - factor) is 0.0.
    double restartLr(double base) const override
    {
        return base * (totalIters_.asDouble() <= 0.0 ? factor_ + (1.0 - factor_) : factor_ + 0.0);
    }

private:
    double factor_;
    PythonNumber totalIters_;
};

}  // namespace

std::unique_ptr<LrSchedule> makeConstantLR(const ScheduleArguments& a) { return std::make_unique<ConstantLR>(a); }

}  // namespace zkdv::schedule
