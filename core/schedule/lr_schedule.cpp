#include "lr_schedule.h"

#include <cmath>

namespace zkdv::schedule {

ScheduledValues LrSchedule::step(std::uint64_t epoch, const ScheduledValues& current) const
{
    if (current.size() != 1 || current[0].size() != baseLr_.size())
        throw ScheduleError(kind_ + ": a step takes the lr of " + std::to_string(baseLr_.size()) + " parameter groups, one option (lr); it was given " +
                            std::to_string(current.size()) + " options" +
                            (current.empty() ? std::string() : " of " + std::to_string(current[0].size()) + " groups"));
    ScheduledValues next = current;
    for (std::size_t g = 0; g < baseLr_.size(); ++g)
        next[0][g] = lr(epoch, current[0][g], baseLr_[g]);
    return next;
}

CycledMomentum CycledMomentum::read(const ScheduleArguments& a)
{
    CycledMomentum momentum;
    const nlohmann::json& cycle = a.json("cycle_momentum");
    if (cycle == false)
        return momentum;
    const std::string must = "false, or the momentum it cycles {\"option\": \"momentum\" or \"betas[0]\", \"max_momentum\", \"base_momentum\"}, "
                             "each of those an array of one finite number per parameter group (" + std::to_string(a.groups()) + ")";
    if (!cycle.is_object() || cycle.size() != 3 || !cycle.contains("option") || (cycle["option"] != "momentum" && cycle["option"] != "betas[0]"))
        a.refuse("cycle_momentum", must);
    for (const char* name : {"max_momentum", "base_momentum"}) {
        const auto it = cycle.find(name);
        if (it == cycle.end() || !it->is_array() || it->size() != a.groups())
            a.refuse("cycle_momentum", must);
        for (const nlohmann::json& value : *it) {
            if (!value.is_number() || !std::isfinite(value.get<double>()))
                a.refuse("cycle_momentum", must);
            (std::string(name) == "max_momentum" ? momentum.max : momentum.base).push_back(value.get<double>());
        }
    }
    momentum.option = cycle["option"].get<std::string>();
    return momentum;
}

std::vector<std::string> MomentumCyclingSchedule::options() const
{
    if (!momentum_.cycled())
        return LrSchedule::options();
    return {"lr", momentum_.option};
}

ScheduledValues MomentumCyclingSchedule::base() const
{
    ScheduledValues values = LrSchedule::base();
    if (momentum_.cycled())
        values.push_back(momentum_.max);
    return values;
}

ScheduledValues MomentumCyclingSchedule::step(std::uint64_t epoch, const ScheduledValues& current) const
{
    if (!momentum_.cycled())
        return LrSchedule::step(epoch, current);
    if (current.size() != 2 || current[1].size() != momentum_.max.size())
        throw ScheduleError(kind() + ": a step takes lr and " + momentum_.option + " of " + std::to_string(momentum_.max.size()) + " parameter groups");
    ScheduledValues next = LrSchedule::step(epoch, ScheduledValues{current[0]});
    next.emplace_back();
    for (std::size_t g = 0; g < momentum_.max.size(); ++g)
        next[1].push_back(momentum(epoch, g));
    return next;
}

}  // namespace zkdv::schedule
