// SequentialLR: port of torch.optim.lr_scheduler.SequentialLR, which hands the groups' rates
// from one scheduler to the next at its milestones. Its constructor resets the rates to the
// base and lets only the first scheduler take its constructor's step; at each later step the
// scheduler whose interval holds the epoch steps (chainable, from the current rate), except
// at a milestone, where the scheduler taking over restarts at its epoch 0 from the base
// through torch's closed form (1.13: step(0); 2.x: _update_lr(0)). So scheduler k runs epochs
// e - milestones[k-1] of its own.

#include <algorithm>

#include "lr_schedule.h"

namespace zkdv::schedule {

namespace {


class SequentialLR : public LrSchedule {
public:
    explicit SequentialLR(const ScheduleArguments& a) : LrSchedule(a, false), children_(makeChildSchedules(a))
    {
        for (const auto& child : children_)
            anyMathLibrary_ = anyMathLibrary_ || child->usesMathLibrary();
        // Torch takes any list and bisects it; the contract takes the form every real
        // SequentialLR has, increasing positive epochs, one fewer than the schedulers (torch's
        // constructor checks the count). Epoch 0 would restart at the constructor's own step,
        // which torch 1.13 and 2.x take differently.
        const nlohmann::json& milestones = a.json("milestones");
        const std::string must = "an array of " + std::to_string(children_.size() - 1) + " increasing positive integers, one fewer than the schedulers";
        if (!milestones.is_array() || milestones.size() + 1 != children_.size())
            a.refuse("milestones", must);
        for (const nlohmann::json& milestone : milestones) {
            if (!milestone.is_number_integer() || milestone.get<std::int64_t>() < 1 || milestone.get<std::int64_t>() > (std::int64_t(1) << 53) ||
                (!milestones_.empty() && static_cast<std::uint64_t>(milestone.get<std::int64_t>()) <= milestones_.back()))
                a.refuse("milestones", must);
            milestones_.push_back(static_cast<std::uint64_t>(milestone.get<std::int64_t>()));
        }
    }

    bool usesMathLibrary() const override { return anyMathLibrary_; }

    double lr(std::uint64_t epoch, double current, double base) const override
    {
        // bisect_right(milestones, epoch): the schedulers whose milestone has passed.
        const std::size_t k = static_cast<std::size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin());
        if (k == 0)
            return children_[0]->lr(epoch, current, base);
        const std::uint64_t start = milestones_[k - 1];
        if (epoch == start)
            return children_[k]->restartLr(base);
        return children_[k]->lr(epoch - start, current, base);
    }

    double restartLr(double) const override
    {
        // makeChildSchedule refuses a composite inside a composite, so nothing restarts one.
        throw ScheduleError("SequentialLR has no closed form: it cannot be restarted by an enclosing SequentialLR");
    }

private:
    std::vector<std::unique_ptr<LrSchedule>> children_;
    std::vector<std::uint64_t> milestones_;
    bool anyMathLibrary_ = false;
};

}  // namespace

std::unique_ptr<LrSchedule> makeSequentialLR(const ScheduleArguments& a) { return std::make_unique<SequentialLR>(a); }

}  // namespace zkdv::schedule
