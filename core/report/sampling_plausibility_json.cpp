#include "zkdv/report/sampling_plausibility_json.h"

#include <cmath>

namespace zkdv {

namespace {

using nlohmann::json;

// A tail below a double's range is 0 in lower_tail; log10_lower_tail still says how small,
// and is null only where it is -infinity (a count the probability makes impossible).
json number(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

json checkCountJson(const CheckCountPlausibility& c)
{
    return {{"observed", c.observed},
            {"probability", number(c.probability)},
            {"expected", number(c.expected)},
            {"lower_tail", number(c.lowerTail())},
            {"log10_lower_tail", number(c.log10LowerTail)}};
}

}  // namespace

json samplingPlausibilityJson(const std::optional<SamplingPlausibility>& p)
{
    if (!p)
        return nullptr;
    return {{"transactions", p->transactions},
            {"update_checks", checkCountJson(p->update)},
            {"state_checks", checkCountJson(p->state)},
            {"threshold", SamplingPlausibility::kImplausibleBelow},
            {"implausible", p->implausible()},
            {"finding", p->implausible() ? json(p->finding()) : json()}};
}

}  // namespace zkdv
