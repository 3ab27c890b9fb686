#pragma once
// The base of the learning-rate schedules: each moves `lr` only, group by group, from the
// group's current value (torch's chainable get_lr()). Private to core/schedule.
//
// Every port keeps the order of torch's Python expression: Python floats are IEEE doubles and
// evaluate left to right (`a * b / c` is `(a * b) / c`), so the same operations in the same
// order round alike. The folder is compiled with -ffp-contract=off (core/CMakeLists.txt): a
// compiler that fuses a * b + c into one multiply-add (the default of GCC for targets that
// have one, such as aarch64) would round once where Python rounds twice.

#include "python_arithmetic.h"
#include "schedule_arguments.h"

namespace zkdv::schedule {

class LrSchedule : public ScheduleContract {
public:
    LrSchedule(const ScheduleArguments& arguments, bool mathLibrary)
        : kind_(arguments.kind()), baseLr_(arguments.baseLr()), mathLibrary_(mathLibrary)
    {
    }

    std::string kind() const override { return kind_; }
    std::vector<std::string> options() const override { return {"lr"}; }
    ScheduledValues base() const override { return {baseLr_}; }
    bool usesMathLibrary() const override { return mathLibrary_; }
    ScheduledValues step(std::uint64_t epoch, const ScheduledValues& current) const override;

protected:
    // What step number `epoch` sets a group's lr to, from `current`; `base` is its base_lr.
    virtual double lr(std::uint64_t epoch, double current, double base) const = 0;
    // The step, for the errors of a step torch cannot take.
    StepPlace where(std::uint64_t epoch) const { return StepPlace{kind_, epoch}; }

private:
    std::string kind_;
    std::vector<double> baseLr_;
    bool mathLibrary_;
};

// The contracts of each kind, from their description; each in the kind's own file.
std::unique_ptr<ScheduleContract> makeStepLR(const ScheduleArguments& arguments);
std::unique_ptr<ScheduleContract> makeMultiStepLR(const ScheduleArguments& arguments);
std::unique_ptr<ScheduleContract> makeExponentialLR(const ScheduleArguments& arguments);
std::unique_ptr<ScheduleContract> makeConstantLR(const ScheduleArguments& arguments);
std::unique_ptr<ScheduleContract> makeLinearLR(const ScheduleArguments& arguments);
std::unique_ptr<ScheduleContract> makePolynomialLR(const ScheduleArguments& arguments);
std::unique_ptr<ScheduleContract> makeCosineAnnealingLR(const ScheduleArguments& arguments);
std::unique_ptr<ScheduleContract> makeCosineAnnealingWarmRestarts(const ScheduleArguments& arguments);

}  // namespace zkdv::schedule
