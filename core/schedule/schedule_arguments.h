#pragma once
// A scheduler description's arguments read as torch's constructors take them: each one named,
// none missing, none unknown (a misspelt argument must not pass silently), each of the type
// torch's arithmetic needs. Private to core/schedule.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "python_number.h"
#include "zkdv/schedule/schedule_contract.h"

namespace zkdv::schedule {

class ScheduleArguments {
public:
    // `scheduler` is {"kind", "arguments", "base"}; `known` the kind's argument names, every one
    // required (a writer spells out torch's defaults) and no other accepted. Checks base.lr:
    // one finite number per group.
    ScheduleArguments(const nlohmann::json& scheduler, const std::set<std::string>& known, std::size_t groups, int torchMajor,
                      int torchMinor);

    PythonNumber number(const std::string& name) const;                // an int or a finite float
    double real(const std::string& name) const { return number(name).asDouble(); }
    std::int64_t integer(const std::string& name) const;               // a JSON integer
    std::vector<PythonNumber> numbers(const std::string& name) const;  // an array of numbers

    const std::string& kind() const { return kind_; }
    const std::vector<double>& baseLr() const { return baseLr_; }
    std::size_t groups() const { return baseLr_.size(); }
    bool torchBefore(int major, int minor) const { return torchMajor_ < major || (torchMajor_ == major && torchMinor_ < minor); }
    int torchMajor() const { return torchMajor_; }
    int torchMinor() const { return torchMinor_; }
    // The argument as written, for a composite's arguments.schedulers.
    const nlohmann::json& json(const std::string& name) const { return member(name); }
    // The description's state (a metric-reading scheduler's), null when it has none.
    const nlohmann::json& state() const { return state_; }

    // A ScheduleError naming the argument: "StepLR: arguments.step_size must be …, not 0".
    [[noreturn]] void refuse(const std::string& name, const std::string& must) const;

private:
    const nlohmann::json& member(const std::string& name) const { return arguments_.at(name); }
    PythonNumber numberOf(const nlohmann::json& value, const std::string& name, const std::string& must) const;

    std::string kind_;
    nlohmann::json arguments_;
    nlohmann::json state_;
    std::vector<double> baseLr_;
    int torchMajor_;
    int torchMinor_;
};

}  // namespace zkdv::schedule
