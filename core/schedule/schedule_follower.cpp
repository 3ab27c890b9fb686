#include "zkdv/schedule/schedule_follower.h"

#include <cstdio>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "zkdv/audit/divergence.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/transaction_record.h"

namespace zkdv::schedule {

namespace {

std::string number(double value)
{
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", value);
    return text;
}

// Units in the last place between two finite doubles of one sign, or a huge number.
std::uint64_t ulpDistance(double a, double b)
{
    if (!std::isfinite(a) || !std::isfinite(b) || std::signbit(a) != std::signbit(b))
        return UINT64_MAX;
    std::uint64_t x, y;
    std::memcpy(&x, &a, sizeof x);
    std::memcpy(&y, &b, sizeof y);
    return x > y ? x - y : y - x;
}

// A step through the C library may round a unit apart on another machine; one that does only
// +, -, *, / in torch's order may not (IEEE doubles round those alike everywhere).
constexpr std::uint64_t kMathLibraryUlpsPerStep = 2;
constexpr std::uint64_t kMathLibraryMostUlps = 32;

}  // namespace

ScheduleFollower::ScheduleFollower(const RootRecord& root, int torchMajor, int torchMinor)
{
    const OptimizerSchedule& schedule = *root.optimizerSchedule;
    options_ = schedule.options;
    rootEpoch_ = schedule.epoch;
    if (!schedule.checked())
        return;
    try {
        contract_ = makeScheduleContract(nlohmann::json::parse(schedule.schedulerJson), root.optimizerGroups.size(), torchMajor, torchMinor);
        if (contract_->options() != options_) {
            std::string moved;
            for (const std::string& option : contract_->options())
                moved += (moved.empty() ? "" : ", ") + option;
            unavailable_ = "the tape schedules other options than its " + contract_->kind() + " moves (" + moved + ")";
            contract_.reset();
        }
    } catch (const std::exception& error) {
        unavailable_ = std::string("the auditor cannot recompute the tape's schedule: ") + error.what();
    }
}

ScheduleFollower::~ScheduleFollower() = default;

bool ScheduleFollower::readsMetric() const
{
    return contract_ && contract_->readsMetric();
}

std::string ScheduleFollower::kind() const
{
    return contract_ ? contract_->kind() : std::string();
}

void ScheduleFollower::startAtRoot()
{
    started_ = true;
    epoch_ = rootEpoch_;
    if (!contract_)
        return;
    current_ = contract_->base();
    if (contract_->readsMetric()) {
        // Not recomputable from a start whose metrics the tape does not hold: the root
        // describes where the scheduler stands.
        state_ = contract_->initialState();
        return;
    }
    try {
        for (std::uint64_t epoch = 0; epoch <= rootEpoch_; ++epoch)
            current_ = contract_->step(epoch, current_);
    } catch (const ScheduleError& error) {
        // Torch's own step raises there, so no run of it reached the root's epoch.
        unavailable_ = std::string("the schedule cannot reach the root's epoch ") + std::to_string(rootEpoch_) + ": " + error.what();
        contract_.reset();
    }
}

void ScheduleFollower::startAfter(const TransactionRecord& previous)
{
    started_ = true;
    epoch_ = previous.scheduleEpoch.value_or(rootEpoch_);
    current_ = recordedValues(previous);
    state_ = previous.scheduleStateValues();
}

ScheduledValues ScheduleFollower::recordedValues(const TransactionRecord& transaction) const
{
    // The tape reader made sure every transaction records every scheduled option.
    ScheduledValues values;
    for (const std::string& option : options_)
        values.push_back(transaction.optimizerGroupValues(option));
    return values;
}

std::vector<TensorComparison> ScheduleFollower::follow(const TransactionRecord& transaction)
{
    const std::uint64_t epoch = transaction.scheduleEpoch.value_or(epoch_);
    ScheduledValues recorded = recordedValues(transaction);
    SchedulerInputs inputs{transaction.scheduleMetricValues(), transaction.scheduleStateValues()};
    std::vector<TensorComparison> comparisons = judge(epoch, recorded, inputs);
    // What the next transaction steps from: what this one recorded, as torch steps from the
    // group's current value (a departure is reported once, here, not at every later step).
    advance(epoch, std::move(recorded), std::move(inputs.state));
    return comparisons;
}

void ScheduleFollower::advance(std::uint64_t epoch, ScheduledValues values, SchedulerState state)
{
    current_ = std::move(values);
    state_ = std::move(state);
    epoch_ = epoch;
}

std::vector<TensorComparison> ScheduleFollower::judge(std::uint64_t epoch, const ScheduledValues& recorded, const SchedulerInputs& inputs) const
{
    std::vector<TensorComparison> comparisons;
    if (!contract_ && unavailable_.empty())
        return comparisons;  // as recorded
    if (!contract_ || !started_ || epoch < epoch_) {
        const std::string why = !unavailable_.empty() ? unavailable_
                                : !started_         ? std::string("the schedule was not started")
                                                    : "scheduler epoch " + std::to_string(epoch) + " is before " + std::to_string(epoch_);
        for (const std::string& option : options_)
            comparisons.push_back(TensorComparison{"optimizer/" + option, "schedule", Verdict::Unverifiable, {}, why});
        return comparisons;
    }
    // The reader bounds how far one transaction's epoch moves past the last one's.
    ScheduledValues expected = current_;
    SchedulerState state = state_;
    const bool metric = contract_->readsMetric();
    if (!metric && (!inputs.metrics.empty() || !inputs.state.empty())) {
        comparisons.push_back(TensorComparison{inputs.metrics.empty() ? "schedule/state" : "schedule/metrics", "schedule", Verdict::Diverged, {},
                                               "the transaction records what a scheduler's steps read and kept, but " + contract_->kind() +
                                                   " reads no metric and keeps no state of its own: no run of it wrote that"});
        return comparisons;
    }
    if (metric && inputs.metrics.size() != epoch - epoch_) {
        comparisons.push_back(TensorComparison{"schedule/metrics", "schedule", Verdict::Diverged, {},
                                               "the transaction records " + std::to_string(inputs.metrics.size()) + " metrics for the " +
                                                   std::to_string(epoch - epoch_) + " scheduler steps since the one before (scheduler epoch " +
                                                   std::to_string(epoch_) + " to " + std::to_string(epoch) + "); each step of " +
                                                   contract_->kind() + " reads one"});
        return comparisons;
    }
    try {
        for (std::uint64_t e = epoch_ + 1; e <= epoch; ++e)
            expected = metric ? contract_->stepWithMetric(e, expected, inputs.metrics[e - epoch_ - 1], state) : contract_->step(e, expected);
    } catch (const ScheduleError& error) {
        // Where torch's own step raises (a division by zero, an overflow) no honest run
        // recorded a value: whatever the transaction holds is not the schedule's.
        for (const std::string& option : options_)
            comparisons.push_back(TensorComparison{"optimizer/" + option, "schedule", Verdict::Diverged, {},
                                                   "the " + contract_->kind() + " schedule has no value at scheduler epoch " +
                                                       std::to_string(epoch) +
                                                       (metric ? " (from the state the transaction before records: " : " (torch's step raises there: ") +
                                                       error.what() + ")"});
        return comparisons;
    }
    const std::uint64_t steps = epoch - epoch_;
    const std::uint64_t allowedUlps =
        contract_->usesMathLibrary() ? std::min(kMathLibraryMostUlps, kMathLibraryUlpsPerStep * std::max<std::uint64_t>(steps, 1)) : 0;
    for (std::size_t o = 0; o < options_.size(); ++o) {
        TensorComparison c;
        c.tensor = "optimizer/" + options_[o];
        c.slot = "schedule";
        if (o >= recorded.size() || o >= expected.size() || recorded[o].size() != expected[o].size()) {
            c.verdict = Verdict::Diverged;
            c.note = "the transaction records " + options_[o] + " for another number of groups than the schedule has";
            comparisons.push_back(std::move(c));
            continue;
        }
        for (std::size_t g = 0; g < recorded[o].size(); ++g) {
            const double want = expected[o][g], got = recorded[o][g];
            std::uint64_t bitsWant, bitsGot;
            std::memcpy(&bitsWant, &want, sizeof bitsWant);
            std::memcpy(&bitsGot, &got, sizeof bitsGot);
            if (bitsWant == bitsGot)
                continue;
            const std::uint64_t ulps = ulpDistance(want, got);
            const Verdict verdict = ulps <= allowedUlps ? Verdict::WithinTolerance : Verdict::Diverged;
            if (verdict < c.verdict)
                continue;
            c.verdict = verdict;
            c.metrics = compareScalars(got, want);
            c.note = "group " + std::to_string(g) + " " + options_[o] + " is " + number(got) + " in the transaction, but the " + contract_->kind() +
                     " schedule gives " + number(want) + " at scheduler epoch " + std::to_string(epoch) +
                     (verdict == Verdict::WithinTolerance ? " (" + std::to_string(ulps) + " ULP: the C library's rounding, within " +
                                                                std::to_string(allowedUlps) + ")"
                                                          : "");
        }
        comparisons.push_back(std::move(c));
    }
    if (metric) {
        // The state the next transaction steps from: what torch's steps leave, bit for bit.
        TensorComparison c;
        c.tensor = "schedule/state";
        c.slot = "schedule";
        const bool same = inputs.state.size() == state.size() &&
                          std::memcmp(inputs.state.data(), state.data(), state.size() * sizeof(double)) == 0;
        if (!same) {
            c.verdict = Verdict::Diverged;
            c.note = contract_->kind() + "'s state after scheduler epoch " + std::to_string(epoch) + " is " + contract_->describeState(state) +
                     " from the metrics the tape records, but the transaction records " +
                     (inputs.state.empty() ? std::string("none") : contract_->describeState(inputs.state));
        }
        comparisons.push_back(std::move(c));
    }
    return comparisons;
}

}  // namespace zkdv::schedule
