// ExponentialLR: port of torch.optim.lr_scheduler.ExponentialLR.get_lr() (chainable): the rate
// times gamma at every step after the constructor's. Torch 1.13 tests last_epoch == 0 and 2.x
// _is_initial, which agree for a scheduler made fresh (last_epoch=-1).

#include "lr_schedule.h"

namespace zkdv::schedule {

namespace {

class ExponentialLR : public LrSchedule {
public:
    explicit ExponentialLR(const ScheduleArguments& a) : LrSchedule(a, false), gamma_(a.real("gamma")) {}

protected:
    double lr(std::uint64_t epoch, double current, double) const override { return epoch == 0 ? current : current * gamma_; }

    // base * gamma ** 0.
    double restartLr(double base) const override { return base; }

private:
    double gamma_;
};

}  // namespace

std::unique_ptr<LrSchedule> makeExponentialLR(const ScheduleArguments& a) { return std::make_unique<ExponentialLR>(a); }

}  // namespace zkdv::schedule
