#include "schedule_arguments.h"

#include <cmath>

namespace zkdv::schedule {

namespace {

// Beyond 2^53 an int no longer converts to a double exactly, and the contracts' double
// arithmetic would part from Python's exact int arithmetic; no real schedule comes near.
constexpr std::uint64_t kMostIntegerMagnitude = std::uint64_t(1) << 53;

}  // namespace

ScheduleArguments::ScheduleArguments(const nlohmann::json& scheduler, const std::set<std::string>& known, std::size_t groups,
                                     int torchMajor, int torchMinor)
    : kind_(scheduler.at("kind").get<std::string>()), torchMajor_(torchMajor), torchMinor_(torchMinor)
{
    const auto arguments = scheduler.find("arguments");
    if (arguments == scheduler.end() || !arguments->is_object())
        throw ScheduleError(kind_ + ": the scheduler description's arguments must be an object of torch's constructor arguments by name");
    arguments_ = *arguments;
    if (const auto state = scheduler.find("state"); state != scheduler.end())
        state_ = *state;
    for (const auto& [name, value] : arguments_.items())
        if (!known.count(name))
            throw ScheduleError(kind_ + ": arguments." + name + " is not an argument of torch.optim.lr_scheduler." + kind_ + " (it takes " +
                                [&] {
                                    std::string list;
                                    for (const std::string& k : known)
                                        list += (list.empty() ? "" : ", ") + k;
                                    return list;
                                }() +
                                ")");
    for (const std::string& name : known)
        if (!arguments_.contains(name))
            throw ScheduleError(kind_ + ": arguments." + name + " is missing (a description spells out every argument, torch's defaults too)");

    const auto base = scheduler.find("base");
    if (base == scheduler.end() || !base->is_object() || !base->contains("lr") || !(*base)["lr"].is_array())
        throw ScheduleError(kind_ + ": the scheduler description needs base.lr, an array of one base learning rate per parameter group");
    for (const auto& [name, value] : base->items())
        if (name != "lr")
            throw ScheduleError(kind_ + ": base." + name + " is not an option " + kind_ + " schedules (it schedules lr)");
    const nlohmann::json& lr = (*base)["lr"];
    if (lr.size() != groups)
        throw ScheduleError(kind_ + ": base.lr holds " + std::to_string(lr.size()) + " rates for " + std::to_string(groups) + " parameter groups");
    for (std::size_t g = 0; g < lr.size(); ++g) {
        if (!lr[g].is_number() || !std::isfinite(lr[g].get<double>()))
            throw ScheduleError(kind_ + ": base.lr[" + std::to_string(g) + "] is " + lr[g].dump() + ", not a finite number");
        baseLr_.push_back(lr[g].get<double>());
    }
}

void ScheduleArguments::refuse(const std::string& name, const std::string& must) const
{
    throw ScheduleError(kind_ + ": arguments." + name + " must be " + must + ", not " + member(name).dump());
}

PythonNumber ScheduleArguments::numberOf(const nlohmann::json& value, const std::string& name, const std::string& must) const
{
    if (value.is_number_unsigned()) {
        if (value.get<std::uint64_t>() > kMostIntegerMagnitude)
            refuse(name, must + " of magnitude at most 2**53");
        return PythonNumber::integer(static_cast<std::int64_t>(value.get<std::uint64_t>()));
    }
    if (value.is_number_integer()) {
        const std::int64_t i = value.get<std::int64_t>();
        if (i < -static_cast<std::int64_t>(kMostIntegerMagnitude) || i > static_cast<std::int64_t>(kMostIntegerMagnitude))
            refuse(name, must + " of magnitude at most 2**53");
        return PythonNumber::integer(i);
    }
    // nlohmann keeps booleans apart from numbers: a description writes Python's True as 1.
    if (!value.is_number_float() || !std::isfinite(value.get<double>()))
        refuse(name, must);
    return PythonNumber::real(value.get<double>());
}

PythonNumber ScheduleArguments::number(const std::string& name) const { return numberOf(member(name), name, "a finite number"); }

std::int64_t ScheduleArguments::integer(const std::string& name) const
{
    if (!member(name).is_number_integer())
        refuse(name, "an integer");
    return numberOf(member(name), name, "an integer").asInteger();
}

std::vector<PythonNumber> ScheduleArguments::numbers(const std::string& name) const
{
    const nlohmann::json& value = member(name);
    if (!value.is_array())
        refuse(name, "an array of finite numbers");
    std::vector<PythonNumber> result;
    for (const nlohmann::json& element : value) {
        if (!element.is_number())
            refuse(name, "an array of finite numbers");
        result.push_back(numberOf(element, name, "an array of finite numbers"));
    }
    return result;
}

}  // namespace zkdv::schedule
