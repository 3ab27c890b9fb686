#pragma once
// The base of the learning-rate schedules: each moves `lr` only, group by group, from the
// group's current value (torch's chainable get_lr()). Private to core/schedule.

#include "schedule_arguments.h"

namespace zkdv::schedule {

class LrSchedule : public ScheduleContract {
public:
    LrSchedule(std::string kind, std::vector<double> baseLr, bool mathLibrary)
        : kind_(std::move(kind)), baseLr_(std::move(baseLr)), mathLibrary_(mathLibrary)
    {
    }

    std::string kind() const override { return kind_; }
    std::vector<std::string> options() const override { return {"lr"}; }
    ScheduledValues base() const override { return {baseLr_}; }
    bool usesMathLibrary() const override { return mathLibrary_; }
    ScheduledValues step(std::uint64_t epoch, const ScheduledValues& current) const override
    {
        ScheduledValues next = current;
        for (std::size_t g = 0; g < next.at(0).size(); ++g)
            next[0][g] = lr(epoch, next[0][g], g < baseLr_.size() ? baseLr_[g] : 0.0);
        return next;
    }

protected:
    // What step number `epoch` sets a group's lr to, from `current`; `base` is its base_lr.
    virtual double lr(std::uint64_t epoch, double current, double base) const = 0;

private:
    std::string kind_;
    std::vector<double> baseLr_;
    bool mathLibrary_;
};

// The contracts of each kind, from their description; in the kind's own file.
std::unique_ptr<ScheduleContract> makeStepLR(const ScheduleArguments& arguments);
std::unique_ptr<ScheduleContract> makeMultiStepLR(const ScheduleArguments& arguments);
std::unique_ptr<ScheduleContract> makeExponentialLR(const ScheduleArguments& arguments);
std::unique_ptr<ScheduleContract> makeConstantLR(const ScheduleArguments& arguments);
std::unique_ptr<ScheduleContract> makeLinearLR(const ScheduleArguments& arguments);
std::unique_ptr<ScheduleContract> makePolynomialLR(const ScheduleArguments& arguments);
std::unique_ptr<ScheduleContract> makeCosineAnnealingLR(const ScheduleArguments& arguments);
std::unique_ptr<ScheduleContract> makeCosineAnnealingWarmRestarts(const ScheduleArguments& arguments);

}  // namespace zkdv::schedule
