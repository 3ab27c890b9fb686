// LinearLR: port of torch.optim.lr_scheduler.LinearLR.get_lr() (chainable). The step rule is
// the same in torch 1.13 and 2.x for a scheduler made fresh; the constructor is not: 1.13
// takes start_factor 0 (whose first step after the constructor's then divides by zero), 2.0
// and later refuse it (pytorch/pytorch#86695).

#include "lr_schedule.h"
#include "python_arithmetic.h"

namespace zkdv::schedule {

namespace {

class LinearLR : public LrSchedule {
public:
    explicit LinearLR(const ScheduleArguments& a)
        : LrSchedule(a, false), start_(a.real("start_factor")), end_(a.real("end_factor")), totalIters_(a.number("total_iters"))
    {
        const bool zeroStartTaken = a.torchBefore(2, 0);
        if (start_ > 1.0 || start_ < 0.0 || (start_ == 0.0 && !zeroStartTaken))
            a.refuse("start_factor", zeroStartTaken ? "between 0 and 1 (torch 1.13's constructor refuses it)"
                                                    : "greater than 0 and at most 1 (torch's constructor refuses it)");
        if (end_ > 1.0 || end_ < 0.0)
            a.refuse("end_factor", "between 0 and 1 (torch's constructor refuses it)");
    }

protected:
    double lr(std::uint64_t epoch, double current, double) const override
    {
        if (epoch == 0)
            return current * start_;
        if (totalIters_.isBelowEpoch(epoch))
            return current;
        // Python: total_iters * start_factor + (last_epoch - 1) * (end_factor - start_factor),
        // the int last_epoch - 1 taken exactly before it meets a float.
        const double span = end_ - start_;
        const double denominator = totalIters_.asDouble() * start_ + static_cast<double>(epoch - 1) * span;
        return current * (1.0 + pythonDivide(span, denominator, where(epoch)));
    }

    // base * (start + (end - start) * min(total_iters, 0) / total_iters): Python's min keeps
    // total_iters unless 0 is smaller, and (end - start) * 0 / total_iters is a zero.
    double restartLr(double base) const override
    {
        if (totalIters_.asDouble() > 0.0)
            return base * (start_ + 0.0);
        const double total = totalIters_.asDouble();
        return base * (start_ + pythonDivide((end_ - start_) * total, total, where(0)));
    }

private:
    double start_, end_;
    PythonNumber totalIters_;
};

}  // namespace

std::unique_ptr<LrSchedule> makeLinearLR(const ScheduleArguments& a) { return std::make_unique<LinearLR>(a); }

}  // namespace zkdv::schedule
