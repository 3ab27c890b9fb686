// PolynomialLR: port of torch.optim.lr_scheduler.PolynomialLR.get_lr() (chainable): up to
// total_iters the rate is multiplied by ((1 - e/total) / (1 - (e-1)/total)) ** power. Torch
// 1.13 tests last_epoch == 0 and 2.x _is_initial, which agree for a scheduler made fresh.

#include "lr_schedule.h"
#include "python_arithmetic.h"

namespace zkdv::schedule {

namespace {

class PolynomialLR : public LrSchedule {
public:
    explicit PolynomialLR(const ScheduleArguments& a)
        : LrSchedule(a, a.real("power") != 1.0), totalIters_(a.number("total_iters")), power_(a.real("power"))
    {
    }

protected:
    double lr(std::uint64_t epoch, double current, double) const override
    {
        if (epoch == 0 || totalIters_.isBelowEpoch(epoch))
            return current;
        // Python's int / int is the correctly rounded quotient, which a double division of
        // the two (exact below 2^53, where the arguments are bounded) is too.
        const StepPlace at = where(epoch);
        const double total = totalIters_.asDouble();
        const double ratio = pythonDivide(1.0 - pythonDivide(static_cast<double>(epoch), total, at),
                                          1.0 - pythonDivide(static_cast<double>(epoch - 1), total, at), at);
        return current * pythonPower(ratio, power_, at);
    }

    // base * (1.0 - min(total_iters, 0) / total_iters) ** power.
    double restartLr(double base) const override
    {
        const StepPlace at = where(0);
        const double total = totalIters_.asDouble();
        const double least = total > 0.0 ? 0.0 : total;
        return base * pythonPower(1.0 - pythonDivide(least, total, at), power_, at);
    }

private:
    PythonNumber totalIters_;
    double power_;
};

}  // namespace

std::unique_ptr<LrSchedule> makePolynomialLR(const ScheduleArguments& a) { return std::make_unique<PolynomialLR>(a); }

}  // namespace zkdv::schedule
