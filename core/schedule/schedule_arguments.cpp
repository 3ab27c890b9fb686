#include "schedule_arguments.h"

#include <cmath>

namespace zkdv::schedule {

ScheduleArguments::ScheduleArguments(const nlohmann::json& scheduler, std::set<std::string> known, std::size_t groups)
{
    kind_ = scheduler.at("kind").get<std::string>();
    auto arguments = scheduler.find("arguments");
    if (arguments == scheduler.end() || !arguments->is_object())
        throw ScheduleError(kind_ + ": the scheduler description needs an arguments object");
    arguments_ = *arguments;
    for (const auto& [name, value] : arguments_.items())
        if (!known.count(name))
            throw ScheduleError(kind_ + ": arguments." + name + " is not an argument of torch.optim.lr_scheduler." + kind_);
    for (const std::string& name : known)
        if (!arguments_.contains(name))
            throw ScheduleError(kind_ + ": arguments." + name + " is missing (a description spells out every argument, torch's defaults too)");
    auto base = scheduler.find("base");
    if (base == scheduler.end() || !base->is_object() || !base->contains("lr") || !(*base)["lr"].is_array())
        throw ScheduleError(kind_ + ": the scheduler description needs base.lr, one base learning rate per parameter group");
    for (const auto& [name, value] : base->items())
        if (name != "lr")
            throw ScheduleError(kind_ + ": base." + name + " is not an option " + kind_ + " schedules");
    const nlohmann::json& lr = (*base)["lr"];
    if (lr.size() != groups)
        throw ScheduleError(kind_ + ": base.lr holds " + std::to_string(lr.size()) + " rates for " + std::to_string(groups) + " parameter groups");
    for (const nlohmann::json& value : lr) {
        if (!value.is_number() || !std::isfinite(value.get<double>()))
            throw ScheduleError(kind_ + ": base.lr holds " + value.dump() + ", not a finite number");
        baseLr_.push_back(value.get<double>());
    }
}

const nlohmann::json& ScheduleArguments::member(const std::string& name) const { return arguments_.at(name); }

void ScheduleArguments::refuse(const std::string& name, const std::string& must) const
{
    throw ScheduleError(kind_ + ": arguments." + name + " must be " + must + ", not " + member(name).dump());
}

double ScheduleArguments::number(const std::string& name) const
{
    const nlohmann::json& value = member(name);
    if (!value.is_number() || !std::isfinite(value.get<double>()))
        refuse(name, "a finite number");
    return value.get<double>();
}

bool ScheduleArguments::isInteger(const std::string& name) const { return member(name).is_number_integer(); }

std::int64_t ScheduleArguments::integer(const std::string& name) const
{
    const nlohmann::json& value = member(name);
    if (!value.is_number_integer())
        refuse(name, "an integer");
    return value.get<std::int64_t>();
}

std::vector<std::int64_t> ScheduleArguments::integers(const std::string& name) const
{
    const nlohmann::json& value = member(name);
    if (!value.is_array())
        refuse(name, "an array of integers");
    std::vector<std::int64_t> result;
    for (const nlohmann::json& element : value) {
        if (!element.is_number_integer())
            refuse(name, "an array of integers");
        result.push_back(element.get<std::int64_t>());
    }
    return result;
}

double pythonModulo(double a, double b)
{
    double r = std::fmod(a, b);
    if (r != 0.0 && ((r < 0.0) != (b < 0.0)))
        r += b;
    return r;
}

}  // namespace zkdv::schedule
