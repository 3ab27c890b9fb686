// The schedule contracts by torch class name (zkdv/schedule/schedule_contract.h).

#include <cstdio>
#include <functional>
#include <map>

#include "lr_schedule.h"

namespace zkdv::schedule {

namespace {

struct Kind {
    std::set<std::string> arguments;
    std::function<std::unique_ptr<LrSchedule>(const ScheduleArguments&)> make;
    bool composite = false;  // made of other schedulers (arguments.schedulers)
    // A scheduler that reads a metric (make is then empty): no composite's child, and its
    // description holds its state.
    std::function<std::unique_ptr<ScheduleContract>(const ScheduleArguments&)> makeMetricReading = {};
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
        {"OneCycleLR", {{"max_lr", "min_lr", "total_steps", "phase_ends", "anneal_strategy", "cycle_momentum"}, makeOneCycleLR}},
        {"CyclicLR", {{"max_lr", "total_size", "step_ratio", "mode", "gamma", "cycle_momentum"}, makeCyclicLR}},
        {"SequentialLR", {{"schedulers", "milestones"}, makeSequentialLR, true}},
        {"ChainedScheduler", {{"schedulers"}, makeChainedScheduler, true}},
        {"ReduceLROnPlateau",
         {{"mode", "factor", "patience", "threshold", "threshold_mode", "cooldown", "min_lr", "eps"}, nullptr, false, makeReduceLROnPlateau}},
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

namespace {

// A hostile description must not make the auditor build thousands of contracts.
constexpr std::size_t kMostChildSchedules = 16;

std::unique_ptr<LrSchedule> makeChildSchedule(const nlohmann::json& child, std::size_t index, const ScheduleArguments& parent)
{
    const std::string where = parent.kind() + ": arguments.schedulers[" + std::to_string(index) + "]";
    if (!child.is_object() || !child.contains("kind") || !child["kind"].is_string() || !child.contains("arguments"))
        throw ScheduleError(where + " must be a scheduler description {\"kind\", \"arguments\"}, not " + child.dump());
    for (const auto& [name, value] : child.items())
        if (name != "kind" && name != "arguments")
            throw ScheduleError(where + ": member " + name + " is none of kind and arguments (the schedulers share the composite's base)");
    const std::string kind = child["kind"].get<std::string>();
    const auto it = kinds().find(kind);
    if (it == kinds().end() || it->second.composite || !it->second.make) {
        std::vector<std::string> leaves;
        for (const auto& [name, k] : kinds())
            if (!k.composite && k.make)
                leaves.push_back(name);
        throw ScheduleError(where + ": kind " + kind + " is not one of " + joined(leaves) + " (a composite holds schedulers of those kinds)");
    }
    nlohmann::json description = {{"kind", kind}, {"arguments", child["arguments"]}, {"base", {{"lr", parent.baseLr()}}}};
    try {
        const ScheduleArguments arguments(description, it->second.arguments, parent.groups(), parent.torchMajor(), parent.torchMinor());
        std::unique_ptr<LrSchedule> made = it->second.make(arguments);
        if (made->options() != std::vector<std::string>{"lr"})
            throw ScheduleError("it cycles the momentum too, and a composite's schedulers move lr only");
        return made;
    } catch (const ScheduleError& error) {
        throw ScheduleError(where + ": " + error.what());
    }
}

}  // namespace

std::vector<std::unique_ptr<LrSchedule>> makeChildSchedules(const ScheduleArguments& parent)
{
    const nlohmann::json& schedulers = parent.json("schedulers");
    if (!schedulers.is_array() || schedulers.empty() || schedulers.size() > kMostChildSchedules)
        parent.refuse("schedulers", "an array of 1 to " + std::to_string(kMostChildSchedules) + " scheduler descriptions {\"kind\", \"arguments\"}");
    std::vector<std::unique_ptr<LrSchedule>> children;
    for (std::size_t k = 0; k < schedulers.size(); ++k)
        children.push_back(makeChildSchedule(schedulers[k], k, parent));
    return children;
}

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
    if (!scheduler.contains("kind") || !scheduler["kind"].is_string())
        throw ScheduleError("the scheduler description's kind must be a string, torch's class name (one of " + joined(scheduleKinds()) + ")");
    const std::string kind = scheduler["kind"].get<std::string>();
    const auto it = kinds().find(kind);
    if (it == kinds().end())
        throw ScheduleError("kind " + kind + ": no schedule contract for it (the contracts reproduce " + joined(scheduleKinds()) + ")");
    const bool metricReading = static_cast<bool>(it->second.makeMetricReading);
    for (const auto& [name, value] : scheduler.items())
        if (name != "kind" && name != "arguments" && name != "base" && (name != "state" || !metricReading))
            throw ScheduleError("the scheduler description's member " + name + " is none of kind, arguments, base" +
                                (metricReading ? " and state" : std::string(" (a ") + kind + " keeps no state of its own)"));
    if (metricReading && !scheduler.contains("state"))
        throw ScheduleError(kind + ": the scheduler description needs its state at the root's epoch (member state)");
    // The step rules ported are those of torch 1.13 and 2.x (docs/schedules.md); an older
    // torch's are not proven (PolynomialLR is new in 1.13).
    if (torchMajor < 1 || (torchMajor == 1 && torchMinor < 13))
        throw ScheduleError(kind + ": no schedule contracts for torch " + std::to_string(torchMajor) + "." + std::to_string(torchMinor) +
                            " (they reproduce torch 1.13 and later)");
    const ScheduleArguments arguments(scheduler, it->second.arguments, groups, torchMajor, torchMinor);
    if (metricReading)
        return it->second.makeMetricReading(arguments);
    return it->second.make(arguments);
}

std::string ScheduleContract::describeState(const SchedulerState& state) const
{
    std::string text = std::to_string(state.size()) + (state.size() == 1 ? " value" : " values");
    for (std::size_t i = 0; i < state.size(); ++i) {
        char value[40];
        std::snprintf(value, sizeof value, "%.17g", state[i]);
        text += (i ? ", " : " (") + std::string(value) + (i + 1 == state.size() ? ")" : "");
    }
    return text;
}

ScheduledValues ScheduleContract::stepWithMetric(std::uint64_t, const ScheduledValues&, double, SchedulerState&) const
{
    throw ScheduleError(kind() + " reads no metric: its steps are step()");
}

}  // namespace zkdv::schedule
