// The schedule contracts by torch class name (zkdv/schedule/schedule_contract.h).

#include <functional>
#include <map>

#include "lr_schedule.h"

namespace zkdv::schedule {

namespace {

struct Kind {
    std::set<std::string> arguments;
    std::function<std::unique_ptr<ScheduleContract>(const ScheduleArguments&)> make;
};

const std::map<std::string, Kind>& kinds()
{
    static const std::map<std::string, Kind> table = {
        {"StepLR", {{"step_size", "gamma"}, makeStepLR}},
        {"MultiStepLR", {{"milestones", "gamma"}, makeMultiStepLR}},
        {"ExponentialLR", {{"gamma"}, makeExponentialLR}},
        {"ConstantLR", {{"factor", "total_iters"}, makeConstantLR}},
        {"LinearLR", {{"start_factor", "end_factor", "total_iters"}, makeLinearLR}},
        {"PolynomialLR", {{"total_iters", "power"}, makePolynomialLR}},
        {"CosineAnnealingLR", {{"T_max", "eta_min"}, makeCosineAnnealingLR}},
        {"CosineAnnealingWarmRestarts", {{"T_0", "T_mult", "eta_min"}, makeCosineAnnealingWarmRestarts}},
    };
    return table;
}

std::string joined(const std::vector<std::string>& names)
{
    std::string text;
    for (const std::string& name : names)
        text += (text.empty() ? "" : ", ") + name;
    return text;
}

}  // namespace

std::vector<std::string> scheduleKinds()
{
    std::vector<std::string> names;
    for (const auto& [name, kind] : kinds())
        names.push_back(name);
    return names;
}

std::unique_ptr<ScheduleContract> makeScheduleContract(const nlohmann::json& scheduler, std::size_t groups, int torchMajor, int torchMinor)
{
    if (!scheduler.is_object())
        throw ScheduleError("a scheduler description is an object {\"kind\", \"arguments\", \"base\"}, not " + scheduler.dump());
    for (const auto& [name, value] : scheduler.items())
        if (name != "kind" && name != "arguments" && name != "base")
            throw ScheduleError("the scheduler description's member " + name + " is none of kind, arguments and base");
    if (!scheduler.contains("kind") || !scheduler["kind"].is_string())
        throw ScheduleError("the scheduler description's kind must be a string, torch's class name (one of " + joined(scheduleKinds()) + ")");
    const std::string kind = scheduler["kind"].get<std::string>();
    const auto it = kinds().find(kind);
    if (it == kinds().end())
        throw ScheduleError("kind " + kind + ": no schedule contract for it (the contracts reproduce " + joined(scheduleKinds()) + ")");
    // The step rules ported are those of torch 1.13 and 2.x (docs/schedules.md); an older
    // torch's are not proven (PolynomialLR is new in 1.13).
    if (torchMajor < 1 || (torchMajor == 1 && torchMinor < 13))
        throw ScheduleError(kind + ": no schedule contracts for torch " + std::to_string(torchMajor) + "." + std::to_string(torchMinor) +
                            " (they reproduce torch 1.13 and later)");
    const ScheduleArguments arguments(scheduler, it->second.arguments, groups, torchMajor, torchMinor);
    return it->second.make(arguments);
}

}  // namespace zkdv::schedule
