// ChainedScheduler: port of torch.optim.lr_scheduler.ChainedScheduler, whose step() steps
// every scheduler in turn, each chainable from the rate the one before it set. Its schedulers
// took their constructors' steps the same way, one after the other, before it was made: the
// contract's epoch 0. The same in torch 1.13 and 2.x.

#include "lr_schedule.h"

namespace zkdv::schedule {

namespace {


class ChainedScheduler : public LrSchedule {
public:
    explicit ChainedScheduler(const ScheduleArguments& a) : LrSchedule(a, false), children_(makeChildSchedules(a))
    {
        for (const auto& child : children_)
            anyMathLibrary_ = anyMathLibrary_ || child->usesMathLibrary();
    }

    bool usesMathLibrary() const override { return anyMathLibrary_; }

    double lr(std::uint64_t epoch, double current, double base) const override
    {
        for (const auto& child : children_)
            current = child->lr(epoch, current, base);
        return current;
    }

    double restartLr(double) const override
    {
        // makeChildSchedule refuses a composite inside a composite, so nothing restarts one.
        throw ScheduleError("ChainedScheduler has no closed form: it cannot be restarted by an enclosing SequentialLR");
    }

private:
    std::vector<std::unique_ptr<LrSchedule>> children_;
    bool anyMathLibrary_ = false;
};

}  // namespace

std::unique_ptr<LrSchedule> makeChainedScheduler(const ScheduleArguments& a) { return std::make_unique<ChainedScheduler>(a); }

}  // namespace zkdv::schedule
