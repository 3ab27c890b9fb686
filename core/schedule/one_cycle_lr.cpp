// OneCycleLR: port of torch.optim.lr_scheduler.OneCycleLR.get_lr(), the same in torch 1.13 and
// 2.x. Not chainable: each step anneals from one phase's start rate to its end rate by the
// fraction of the phase passed, cosine (cos(pi * pct) + 1) or linear, from the group's
// initial_lr (max_lr / div_factor), max_lr and min_lr (initial_lr / final_div_factor), which
// its constructor leaves in the group. With cycle_momentum it also anneals the group's momentum
// (or betas[0], use_beta1) between max_momentum and base_momentum in the opposite direction, by
// the same phases and fraction: the contract then moves two options (format 1.8 schedules an
// array's element, "betas[0]").

#include <cmath>

#include "lr_schedule.h"
#include "python_arithmetic.h"

namespace zkdv::schedule {

namespace {

class OneCycleLR : public MomentumCyclingSchedule {
public:
    explicit OneCycleLR(const ScheduleArguments& a)
        : MomentumCyclingSchedule(a, isCosine(a)), cosine_(isCosine(a)), totalSteps_(a.integer("total_steps"))
    {
        if (totalSteps_ <= 0)
            a.refuse("total_steps", "a positive integer (torch's constructor refuses it)");
        // The scheduler keeps what its constructor derived, not pct_start, div_factor and
        // final_div_factor: per group initial_lr (the base), max_lr and min_lr, and the phases'
        // last steps (float(pct_start * total_steps) - 1, for three phases float(2 * pct_start *
        // total_steps) - 2, then total_steps - 1).
        const std::vector<PythonNumber> maxLr = a.numbers("max_lr"), minLr = a.numbers("min_lr");
        const std::string perGroup = "an array of one rate per parameter group (" + std::to_string(a.groups()) + ")";
        if (maxLr.size() != a.groups())
            a.refuse("max_lr", perGroup);
        if (minLr.size() != a.groups())
            a.refuse("min_lr", perGroup);
        for (std::size_t g = 0; g < a.groups(); ++g) {
            groups_.push_back({a.baseLr()[g], maxLr[g].asDouble(), minLr[g].asDouble()});
            for (std::size_t h = 0; h < g; ++h)
                if (groups_[h].initial == groups_[g].initial && (groups_[h].max != groups_[g].max || groups_[h].min != groups_[g].min))
                    a.refuse("max_lr", "the same for groups of the same base rate (a group's rates are found by its base)");
        }
        const std::vector<PythonNumber> ends = a.numbers("phase_ends");
        if (ends.size() != 2 && ends.size() != 3)
            a.refuse("phase_ends", "the last steps of 2 or 3 phases");
        if (ends.back().asDouble() != static_cast<double>(totalSteps_ - 1))
            a.refuse("phase_ends", "ending at total_steps - 1");
        for (std::size_t i = 0; i + 1 < ends.size(); ++i)
            if (ends[i].isInteger())
                a.refuse("phase_ends", "floats before the last (torch computes them as float(pct_start * total_steps) - 1)");
        // torch's _schedule_phases: the momentum moves against the rate, and stays at its
        // maximum through the third phase.
        using M = MomentumEnd;
        if (ends.size() == 3)
            phases_ = {{ends[0].asDouble(), &Group::initial, &Group::max, M::Max, M::Base},
                       {ends[1].asDouble(), &Group::max, &Group::initial, M::Base, M::Max},
                       {ends[2].asDouble(), &Group::initial, &Group::min, M::Max, M::Max}};
        else
            phases_ = {{ends[0].asDouble(), &Group::initial, &Group::max, M::Max, M::Base},
                       {ends[1].asDouble(), &Group::max, &Group::min, M::Base, M::Max}};
    }

    double lr(std::uint64_t epoch, double, double base) const override
    {
        const StepPlace at = where(epoch);
        if (epoch > static_cast<std::uint64_t>(totalSteps_))
            throw ScheduleError(at.text() + ": torch's step raises there (\"Tried to step " + std::to_string(epoch) + " times. The specified number of total steps is " +
                                std::to_string(totalSteps_) + "\"), so no torch run has this step");
        const Group* group = nullptr;
        for (const Group& candidate : groups_)
            if (candidate.initial == base)
                group = &candidate;
        if (!group)
            throw ScheduleError(at.text() + ": a group of base rate " + std::to_string(base) + ", which the description does not hold");
        const auto [phase, pct] = placeOf(epoch);
        return anneal((*group).*phases_[phase].from, (*group).*phases_[phase].to, pct);
    }

    // Torch's closed form is its get_lr(): SequentialLR restarts it at step 0.
    double restartLr(double base) const override { return lr(0, base, base); }

private:
    struct Group {
        double initial, max, min;
    };
    enum class MomentumEnd { Max, Base };
    struct Phase {
        double end;
        double Group::*from;
        double Group::*to;
        MomentumEnd momentumFrom, momentumTo;
    };

    // The phase step `epoch` falls in and the fraction of it passed, as torch's get_lr() finds them.
    std::pair<std::size_t, double> placeOf(std::uint64_t epoch) const
    {
        const StepPlace at = where(epoch);
        const double step = static_cast<double>(epoch);
        double start = 0.0;
        for (std::size_t i = 0; i < phases_.size(); ++i) {
            const Phase& phase = phases_[i];
            if (step <= phase.end || i + 1 == phases_.size())
                return {i, pythonDivide(step - start, phase.end - start, at)};
            start = phase.end;
        }
        return {phases_.size() - 1, 0.0};  // unreachable: the last phase always answers
    }

    double momentumAt(std::size_t group, MomentumEnd end) const
    {
        return end == MomentumEnd::Max ? cycledMomentum().max[group] : cycledMomentum().base[group];
    }

    double momentum(std::uint64_t epoch, std::size_t group) const override
    {
        const auto [phase, pct] = placeOf(epoch);
        return anneal(momentumAt(group, phases_[phase].momentumFrom), momentumAt(group, phases_[phase].momentumTo), pct);
    }

    static bool isCosine(const ScheduleArguments& a)
    {
        const nlohmann::json& strategy = a.json("anneal_strategy");
        if (strategy != "cos" && strategy != "linear")
            a.refuse("anneal_strategy", "\"cos\" or \"linear\"");
        return strategy == "cos";
    }

    double anneal(double start, double end, double pct) const
    {
        if (cosine_) {
            const double cosOut = std::cos(kPythonPi * pct) + 1.0;
            return end + (start - end) / 2.0 * cosOut;
        }
        return (end - start) * pct + start;
    }

    bool cosine_;
    std::int64_t totalSteps_;
    std::vector<Group> groups_;
    std::vector<Phase> phases_;
};

}  // namespace

std::unique_ptr<LrSchedule> makeOneCycleLR(const ScheduleArguments& a) { return std::make_unique<OneCycleLR>(a); }

}  // namespace zkdv::schedule
