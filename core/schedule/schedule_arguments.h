#pragma once
// Reading a scheduler description's arguments as torch's constructors take them, refusing
// what they refuse, and Python's arithmetic where a port needs it. Private to core/schedule.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zkdv/schedule/schedule_contract.h"

namespace zkdv::schedule {

class ScheduleArguments {
public:
    // `scheduler` is {"kind", "arguments", "base"}; `known` the kind's argument names, every one
    // required (a writer spells out torch's defaults) and no other accepted.
    ScheduleArguments(const nlohmann::json& scheduler, std::set<std::string> known, std::size_t groups);

    double number(const std::string& name) const;             // a finite number
    std::int64_t integer(const std::string& name) const;      // an integer (not a bool)
    std::vector<std::int64_t> integers(const std::string& name) const;  // an array of integers
    bool isInteger(const std::string& name) const;
    const std::vector<double>& baseLr() const { return baseLr_; }

    // A ScheduleError naming the argument: "StepLR: arguments.step_size must be …".
    [[noreturn]] void refuse(const std::string& name, const std::string& must) const;

private:
    const nlohmann::json& member(const std::string& name) const;

    std::string kind_;
    nlohmann::json arguments_;
    std::vector<double> baseLr_;
};

// Python's a % b for doubles: the result has the sign of b (0 when b divides a).
double pythonModulo(double a, double b);

}  // namespace zkdv::schedule
