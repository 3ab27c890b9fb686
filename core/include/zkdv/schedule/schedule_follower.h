#pragma once
// Follows a tape's schedule through the transactions a replay reads (spec 3.3): each
// transaction's scheduled values against what the root's scheduler gives at its epoch, stepped
// from the values the transaction before recorded, as torch's chainable schedulers step from
// the group's current value. Checking one step at a time keeps a last-bit difference of the
// trainer's C library (cos, pow) from adding up over a long run.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/audit/replay_outcome.h"
#include "zkdv/schedule/schedule_contract.h"

namespace zkdv {
struct RootRecord;
struct TransactionRecord;
}  // namespace zkdv

namespace zkdv::schedule {

// What a transaction records of its scheduler's steps beside the values (spec 3.3, since 1.9):
// the metric each step since the transaction before was given, and the scheduler's own state
// after them (schedule/metrics, schedule/state; empty when the tape holds none).
struct SchedulerInputs {
    std::vector<double> metrics;
    SchedulerState state;
};

class ScheduleFollower {
public:
    // `root` has an optimizer.schedule. A scheduler the auditor has no contract for (an unknown
    // kind, arguments the contract refuses) is not an error here: every transaction's schedule
    // comparison then says why it is unverifiable.
    ScheduleFollower(const RootRecord& root, int torchMajor, int torchMinor);
    ~ScheduleFollower();

    // "StepLR", or "" when the values are as recorded (no scheduler to check them against).
    std::string kind() const;
    // Why there is no contract for the root's scheduler ("" when there is one, or no scheduler).
    const std::string& unavailable() const { return unavailable_; }

    // Where the schedule stands before transaction 0 (the root's epoch, stepped from the base
    // values), or after `previous`, the transaction before the first one replayed.
    void startAtRoot();
    void startAfter(const TransactionRecord& previous);

    // One comparison per scheduled option ("optimizer/lr", slot "schedule"), naming the group,
    // the recorded and the expected value where they differ; none when the schedule is as
    // recorded. Then stands after `transaction`.
    std::vector<TensorComparison> follow(const TransactionRecord& transaction);

    // The same in two halves, for the recorder, which refuses a step off its schedule before
    // it is taken: `values` (and `inputs`) judged at `epoch` (at least the one the schedule
    // stands at), and then standing after a step at `epoch` that used `values` and left `state`.
    std::vector<TensorComparison> judge(std::uint64_t epoch, const ScheduledValues& values, const SchedulerInputs& inputs = {}) const;
    void advance(std::uint64_t epoch, ScheduledValues values, SchedulerState state = {});
    // Whether the root's scheduler steps with a metric (its transactions record SchedulerInputs).
    bool readsMetric() const;

    // The scheduled values of `transaction`, in options() order.
    ScheduledValues recordedValues(const TransactionRecord& transaction) const;
    const std::vector<std::string>& options() const { return options_; }

private:

    std::vector<std::string> options_;
    std::unique_ptr<ScheduleContract> contract_;
    std::string unavailable_;  // why there is no contract for the root's scheduler
    std::uint64_t rootEpoch_ = 0;
    std::uint64_t epoch_ = 0;
    ScheduledValues current_;
    SchedulerState state_;
    bool started_ = false;
};

}  // namespace zkdv::schedule
