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

    // What step number `epoch` sets a group's lr to, from `current`; `base` is its base_lr.
    virtual double lr(std::uint64_t epoch, double current, double base) const = 0;
    // What a step given the epoch 0 sets a group's lr to: torch's closed form
    // (_get_closed_form_lr) at last_epoch 0, from the base alone. SequentialLR restarts the
    // scheduler that takes over at a milestone so (torch 1.13: step(0); 2.x: _update_lr(0)).
    virtual double restartLr(double base) const = 0;

protected:
    // The step, for the errors of a step torch cannot take.
    StepPlace where(std::uint64_t epoch) const { return StepPlace{kind_, epoch}; }

private:
    std::string kind_;
    std::vector<double> baseLr_;
    bool mathLibrary_;
};

// The momentum OneCycleLR and CyclicLR cycle against the rate with cycle_momentum: the option
// ("momentum", or "betas[0]" for an optimizer with betas) and each group's max_momentum and
// base_momentum, from arguments.cycle_momentum (false, or {"option", "max_momentum",
// "base_momentum"}); `option` is empty when the momentum is not cycled.
struct CycledMomentum {
    std::string option;
    std::vector<double> max, base;

    static CycledMomentum read(const ScheduleArguments& arguments);
    bool cycled() const { return !option.empty(); }
};

// A schedule that may move the momentum too: its options, base values (the momentum's before
// step 0 is max_momentum, which the constructor sets) and steps hold both.
class MomentumCyclingSchedule : public LrSchedule {
public:
    MomentumCyclingSchedule(const ScheduleArguments& arguments, bool mathLibrary)
        : LrSchedule(arguments, mathLibrary), momentum_(CycledMomentum::read(arguments))
    {
    }

    std::vector<std::string> options() const override;
    ScheduledValues base() const override;
    ScheduledValues step(std::uint64_t epoch, const ScheduledValues& current) const override;

protected:
    // What step `epoch` sets group `group`'s momentum to (not chainable: from the step alone).
    virtual double momentum(std::uint64_t epoch, std::size_t group) const = 0;
    const CycledMomentum& cycledMomentum() const { return momentum_; }

private:
    CycledMomentum momentum_;
};

// The contracts of each kind, from their description; each in the kind's own file.
std::unique_ptr<LrSchedule> makeStepLR(const ScheduleArguments& arguments);
std::unique_ptr<LrSchedule> makeMultiStepLR(const ScheduleArguments& arguments);
std::unique_ptr<LrSchedule> makeExponentialLR(const ScheduleArguments& arguments);
std::unique_ptr<LrSchedule> makeConstantLR(const ScheduleArguments& arguments);
std::unique_ptr<LrSchedule> makeLinearLR(const ScheduleArguments& arguments);
std::unique_ptr<LrSchedule> makePolynomialLR(const ScheduleArguments& arguments);
std::unique_ptr<LrSchedule> makeCosineAnnealingLR(const ScheduleArguments& arguments);
std::unique_ptr<LrSchedule> makeCosineAnnealingWarmRestarts(const ScheduleArguments& arguments);
std::unique_ptr<LrSchedule> makeOneCycleLR(const ScheduleArguments& arguments);
std::unique_ptr<LrSchedule> makeCyclicLR(const ScheduleArguments& arguments);
// ReduceLROnPlateau, which steps with a metric (reduce_lr_on_plateau.cpp).
std::unique_ptr<ScheduleContract> makeReduceLROnPlateau(const ScheduleArguments& arguments);
// The composites of other schedulers (arguments.schedulers, leaf kinds only).
std::unique_ptr<LrSchedule> makeSequentialLR(const ScheduleArguments& arguments);
std::unique_ptr<LrSchedule> makeChainedScheduler(const ScheduleArguments& arguments);

// The schedulers a composite's arguments.schedulers describes (1 to 16 descriptions {"kind",
// "arguments"}, sharing the composite's base); a composite is refused there (torch's
// composites step their children in ways that nest differently across releases).
std::vector<std::unique_ptr<LrSchedule>> makeChildSchedules(const ScheduleArguments& parent);

}  // namespace zkdv::schedule
