#pragma once
// The functional form of one torch.optim.lr_scheduler scheduler: the values its step() gives
// the options it moves, ported from torch so that an auditor recomputes a tape's schedule
// (docs/tape-format.md, section 3.3). Torch-free: plain double arithmetic in torch's order,
// so that the values are torch's bit for bit where the C library's functions are the
// trainer's (cos, pow; see usesMathLibrary()).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zkdv/util/error.h"

namespace zkdv::schedule {

// A scheduler description a contract cannot take: an unknown kind, a missing or ill-typed
// argument, base values of the wrong count. Says which member and what was found.
class ScheduleError : public Error {
public:
    using Error::Error;
};

// Per scheduled option, per parameter group: values[option][group].
using ScheduledValues = std::vector<std::vector<double>>;
// What a scheduler whose step reads a metric keeps of its own beside the values it sets, as a
// transaction's schedule/state holds it (ReduceLROnPlateau: best, num_bad_epochs,
// cooldown_counter). Empty for the others.
using SchedulerState = std::vector<double>;

class ScheduleContract {
public:
    virtual ~ScheduleContract() = default;

    // torch's class name ("StepLR", "CosineAnnealingLR", …).
    virtual std::string kind() const = 0;
    // The group options this scheduler moves, in the order of ScheduledValues ("lr").
    virtual std::vector<std::string> options() const = 0;
    // What the scheduler's step() number `epoch` (torch's last_epoch after it) sets, given what
    // the groups held before it: torch's chainable get_lr() reads each group's current value.
    // Epoch 0 is the step the scheduler's constructor takes, from the base values
    // (base_lrs, torch's initial_lr) the description holds.
    // Throws ScheduleError where torch's step itself raises (a division by zero, an overflowing
    // power: no torch run can have recorded that step, so no value may pass for it), and for
    // `current` of another shape than base().
    virtual ScheduledValues step(std::uint64_t epoch, const ScheduledValues& current) const = 0;
    // The values before epoch 0: the description's base values.
    virtual ScheduledValues base() const = 0;
    // Whether step() calls the C library (cos, pow): another libm can round those in the last
    // bit, so a replay on another machine may see values a unit in the last place apart.
    virtual bool usesMathLibrary() const = 0;

    // A scheduler whose step reads a metric and keeps state of its own (ReduceLROnPlateau):
    // its steps are stepWithMetric(), never step(); base() holds the values and
    // initialState() the state at the root's epoch, which the description records, since no
    // rule recomputes them from a start the metrics of which the tape does not hold.
    virtual bool readsMetric() const { return false; }
    virtual SchedulerState initialState() const { return {}; }
    // The step number `epoch` given `metric`, from `current` and `state`, which it updates.
    virtual ScheduledValues stepWithMetric(std::uint64_t epoch, const ScheduledValues& current, double metric, SchedulerState& state) const;
    // A state in words, for a message ("best 0.5, num_bad_epochs 2, cooldown_counter 0").
    virtual std::string describeState(const SchedulerState& state) const;
};

// A contract for the scheduler the tape's root describes ({"kind", "arguments", "base"}, section
// 3.3) in a training run of `groups` parameter groups with torch `torchMajor`.`torchMinor`;
// throws ScheduleError.
std::unique_ptr<ScheduleContract> makeScheduleContract(const nlohmann::json& scheduler, std::size_t groups, int torchMajor, int torchMinor);

// The kinds makeScheduleContract knows, for messages and docs.
std::vector<std::string> scheduleKinds();

}  // namespace zkdv::schedule
