// ReduceLROnPlateau: port of torch.optim.lr_scheduler.ReduceLROnPlateau.step(metrics), the
// same arithmetic in torch 1.13 and 2.x. Each step reads the metric it is given; a metric
// better than the best one by the threshold resets the count of bad steps, and more bad steps
// than patience multiply every group's rate by factor (no lower than its min_lr, and only
// by more than eps), after which cooldown steps count no bad steps. The rates and the state
// (best, num_bad_epochs, cooldown_counter) are what the steps before left: the scheduler
// is not chainable from its base values, so a tape records its state (spec 3.3).

#include <cmath>
#include <cstdio>
#include <limits>

#include "lr_schedule.h"

namespace zkdv::schedule {

namespace {

// Counters beyond 2^53 would part from Python's exact ints; no real run comes near.
constexpr double kMostCounter = 9007199254740992.0;

enum State : std::size_t { kBest, kNumBadEpochs, kCooldownCounter, kStateSize };

bool isCounter(double value) { return std::isfinite(value) && std::floor(value) == value && std::fabs(value) <= kMostCounter; }

std::string number(double value)
{
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", value);
    return text;
}

class ReduceLROnPlateau : public ScheduleContract {
public:
    explicit ReduceLROnPlateau(const ScheduleArguments& a)
        : baseLr_(a.baseLr()), factor_(a.real("factor")), patience_(a.integer("patience")), threshold_(a.real("threshold")),
          cooldown_(a.integer("cooldown")), eps_(a.real("eps"))
    {
        const nlohmann::json& mode = a.json("mode");
        if (!mode.is_string() || (mode != "min" && mode != "max"))
            a.refuse("mode", "\"min\" or \"max\"");
        maximise_ = mode == "max";
        const nlohmann::json& thresholdMode = a.json("threshold_mode");
        if (!thresholdMode.is_string() || (thresholdMode != "rel" && thresholdMode != "abs"))
            a.refuse("threshold_mode", "\"rel\" or \"abs\"");
        relative_ = thresholdMode == "rel";
        // Torch's constructor raises for a factor of 1 or more.
        if (!(factor_ < 1.0))
            a.refuse("factor", "a number below 1.0 (torch raises \"Factor should be < 1.0.\")");
        for (const PythonNumber& value : a.numbers("min_lr"))
            minLr_.push_back(value.asDouble());
        if (minLr_.size() != a.groups())
            a.refuse("min_lr", "an array of one minimum rate per parameter group (" + std::to_string(a.groups()) + ")");

        // The state at the root: {"best": a number, or null for torch's mode_worse (inf when
        // minimising, -inf when maximising), "num_bad_epochs", "cooldown_counter"}.
        const nlohmann::json& state = a.state();
        const auto refuseState = [&] {
            throw ScheduleError("ReduceLROnPlateau: the description's state must be {\"best\": a number or null (mode_worse), "
                                "\"num_bad_epochs\": an integer, \"cooldown_counter\": an integer}, not " + state.dump());
        };
        if (!state.is_object() || state.size() != 3 || !state.contains("best") || !state.contains("num_bad_epochs") ||
            !state.contains("cooldown_counter"))
            refuseState();
        const nlohmann::json& best = state["best"];
        if (!best.is_null() && !(best.is_number() && std::isfinite(best.get<double>())))
            refuseState();
        for (const char* counter : {"num_bad_epochs", "cooldown_counter"})
            if (!state[counter].is_number_integer() || !isCounter(state[counter].get<double>()))
                refuseState();
        initial_ = {best.is_null() ? (maximise_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity())
                                   : best.get<double>(),
                    state["num_bad_epochs"].get<double>(), state["cooldown_counter"].get<double>()};
    }

    std::string kind() const override { return "ReduceLROnPlateau"; }
    std::vector<std::string> options() const override { return {"lr"}; }
    ScheduledValues base() const override { return {baseLr_}; }
    bool usesMathLibrary() const override { return false; }
    bool readsMetric() const override { return true; }
    SchedulerState initialState() const override { return initial_; }

    std::string describeState(const SchedulerState& state) const override
    {
        if (state.size() != kStateSize)
            return ScheduleContract::describeState(state);
        return "best " + number(state[kBest]) + ", num_bad_epochs " + number(state[kNumBadEpochs]) + ", cooldown_counter " +
               number(state[kCooldownCounter]);
    }

    ScheduledValues step(std::uint64_t, const ScheduledValues&) const override
    {
        throw ScheduleError("ReduceLROnPlateau steps with a metric: its steps are step(metrics)");
    }

    ScheduledValues stepWithMetric(std::uint64_t, const ScheduledValues& current, double metric, SchedulerState& state) const override
    {
        if (current.size() != 1 || current[0].size() != baseLr_.size())
            throw ScheduleError("ReduceLROnPlateau: the values to step from are not one lr per group");
        if (state.size() != kStateSize || !isCounter(state[kNumBadEpochs]) || !isCounter(state[kCooldownCounter]))
            throw ScheduleError("the state to step from is not ReduceLROnPlateau's (best, num_bad_epochs, cooldown_counter)");
        double& best = state[kBest];
        double& bad = state[kNumBadEpochs];
        double& cooldown = state[kCooldownCounter];
        if (isBetter(metric, best)) {
            best = metric;
            bad = 0;
        } else {
            bad += 1;
        }
        if (cooldown > 0) {
            cooldown -= 1;
            bad = 0;  // torch ignores bad steps in cooldown
        }
        ScheduledValues next = current;
        if (bad > static_cast<double>(patience_)) {
            for (std::size_t g = 0; g < next[0].size(); ++g) {
                const double old = next[0][g];
                const double reduced = old * factor_;
                // Python's max(a, b) is a unless b > a.
                const double lowered = minLr_[g] > reduced ? minLr_[g] : reduced;
                if (old - lowered > eps_)
                    next[0][g] = lowered;
            }
            cooldown = static_cast<double>(cooldown_);
            bad = 0;
        }
        return next;
    }

private:
    bool isBetter(double a, double best) const
    {
        if (!maximise_ && relative_)
            return a < best * (1.0 - threshold_);
        if (!maximise_)
            return a < best - threshold_;
        if (relative_)
            return a > best * (threshold_ + 1.0);
        return a > best + threshold_;
    }

    std::vector<double> baseLr_;
    double factor_;
    std::int64_t patience_;
    double threshold_;
    std::int64_t cooldown_;
    double eps_;
    bool maximise_ = false;
    bool relative_ = true;
    std::vector<double> minLr_;
    SchedulerState initial_;
};

}  // namespace

std::unique_ptr<ScheduleContract> makeReduceLROnPlateau(const ScheduleArguments& arguments)
{
    return std::make_unique<ReduceLROnPlateau>(arguments);
}

}  // namespace zkdv::schedule
