// OneCycleLR: port of torch.optim.lr_scheduler.OneCycleLR.get_lr(), the same in torch 1.13 and
// 2.x. Not chainable: each step anneals from one phase's start rate to its end rate by the
// fraction of the phase passed, cosine (cos(pi * pct) + 1) or linear, from the group's
// initial_lr (max_lr / div_factor), max_lr and min_lr (initial_lr / final_div_factor), which
// its constructor leaves in the group. The contract takes cycle_momentum false only: with it
// true torch also moves momentum or betas[0], which this tape schedules nowhere.

#include <cmath>

#include "lr_schedule.h"
#include "python_arithmetic.h"

namespace zkdv::schedule {

namespace {

class OneCycleLR : public LrSchedule {
public:
    explicit OneCycleLR(const ScheduleArguments& a) : LrSchedule(a, isCosine(a)), cosine_(isCosine(a)), totalSteps_(a.integer("total_steps"))
    {
        if (totalSteps_ <= 0)
            a.refuse("total_steps", "a positive integer (torch's constructor refuses it)");
        if (!a.json("cycle_momentum").is_boolean() || a.json("cycle_momentum").get<bool>())
            a.refuse("cycle_momentum", "false (with it true torch also moves momentum or betas, which the tape does not schedule)");

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
        if (ends.size() == 3)
            phases_ = {{ends[0].asDouble(), &Group::initial, &Group::max},
                       {ends[1].asDouble(), &Group::max, &Group::initial},
                       {ends[2].asDouble(), &Group::initial, &Group::min}};
        else
            phases_ = {{ends[0].asDouble(), &Group::initial, &Group::max}, {ends[1].asDouble(), &Group::max, &Group::min}};
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
        const double step = static_cast<double>(epoch);
        double start = 0.0;
        for (std::size_t i = 0; i < phases_.size(); ++i) {
            const Phase& phase = phases_[i];
            if (step <= phase.end || i + 1 == phases_.size()) {
                const double pct = pythonDivide(step - start, phase.end - start, at);
                return anneal((*group).*phase.from, (*group).*phase.to, pct);
            }
            start = phase.end;
        }
        return base;  // unreachable: the last phase always answers
    }

    // Torch's closed form is its get_lr(): SequentialLR restarts it at step 0.
    double restartLr(double base) const override { return lr(0, base, base); }

private:
    struct Group {
        double initial, max, min;
    };
    struct Phase {
        double end;
        double Group::*from;
        double Group::*to;
    };

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
