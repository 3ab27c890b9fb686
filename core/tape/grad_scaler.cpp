#include "zkdv/tape/grad_scaler.h"

#include <cmath>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"

namespace zkdv {

namespace {
using nlohmann::json;

// torch keeps the growth tracker in an int32 tensor.
constexpr std::int64_t kMostGrowthInterval = std::numeric_limits<std::int32_t>::max();

[[noreturn]] void fail(std::string_view where, const std::string& message) { throw FormatError(std::string(where) + ": " + message); }

const json& member(const json& object, std::string_view where, const char* name)
{
    auto it = object.find(name);
    if (it == object.end())
        fail(where, std::string("missing member \"") + name + "\"");
    return *it;
}

double numberMember(const json& object, std::string_view where, const char* name)
{
    const json& value = member(object, where, name);
    if (!value.is_number())
        fail(where, std::string("\"") + name + "\" must be a number, found " + value.dump());
    return value.get<double>();
}

std::int64_t integerMember(const json& object, std::string_view where, const char* name)
{
    const json& value = member(object, where, name);
    // An integer in the text (no fraction or exponent) that fits torch's int32 tensors.
    if (!value.is_number_integer() || (value.is_number_unsigned() && value.get<std::uint64_t>() > std::uint64_t(kMostGrowthInterval)) ||
        value.get<std::int64_t>() < std::numeric_limits<std::int32_t>::min() || value.get<std::int64_t>() > kMostGrowthInterval)
        fail(where, std::string("\"") + name + "\" must be an integer that fits 32 bits, found " + value.dump());
    return value.get<std::int64_t>();
}

float scaleMember(const json& object, std::string_view where)
{
    const double value = numberMember(object, where, "scale");
    if (!std::isfinite(value) || std::fabs(value) > double(std::numeric_limits<float>::max()) ||
        static_cast<double>(static_cast<float>(value)) != value)
        fail(where, "\"scale\" is " + member(object, where, "scale").dump() + ", which is not a finite float32 value (torch keeps the scale in a "
                    "float32 tensor)");
    return static_cast<float>(value);
}

void onlyMembers(const json& object, std::string_view where, std::set<std::string> allowed)
{
    for (const auto& item : object.items())
        if (!allowed.count(item.key()))
            fail(where, "unexpected member \"" + item.key() + "\"");
}

GradScalerState stateOf(const json& object, std::string_view where, const GradScalerRule& rule)
{
    GradScalerState state;
    state.scale = scaleMember(object, where);
    state.growthTracker = integerMember(object, where, "growth_tracker");
    const std::string problem = gradScalerStateProblem(state, rule);
    if (!problem.empty())
        fail(where, problem);
    return state;
}

json scaleJson(float scale)
{
    // nlohmann writes the shortest decimal of the double, which reads back as the same float.
    return json(static_cast<double>(scale));
}
}  // namespace

bool GradScalerState::operator==(const GradScalerState& other) const
{
    // Bit for bit: the scale multiplies every loss, so -0 and 0 are not one scale.
    return std::signbit(scale) == std::signbit(other.scale) && scale == other.scale && growthTracker == other.growthTracker;
}

GradScalerState nextGradScalerState(const GradScalerState& state, const GradScalerRule& rule, bool skipped)
{
    GradScalerState next = state;
    if (skipped) {
        next.scale = static_cast<float>(static_cast<double>(state.scale) * rule.backoffFactor);
        next.growthTracker = 0;
        return next;
    }
    const std::int64_t successful = state.growthTracker + 1;
    if (successful == rule.growthInterval) {
        const float grown = static_cast<float>(static_cast<double>(state.scale) * rule.growthFactor);
        if (std::isfinite(grown))
            next.scale = grown;
        next.growthTracker = 0;
    } else {
        next.growthTracker = successful;
    }
    return next;
}

std::string gradScalerRuleProblem(const GradScalerRule& rule)
{
    if (!std::isfinite(rule.growthFactor) || !(rule.growthFactor > 1.0))
        return "growth_factor must be a finite number above 1 (torch's GradScaler asserts so)";
    if (!(rule.backoffFactor > 0.0 && rule.backoffFactor < 1.0))
        return "backoff_factor must lie strictly between 0 and 1 (torch's GradScaler asserts it below 1; 0 would zero the scale)";
    if (rule.growthInterval < 1 || rule.growthInterval > kMostGrowthInterval)
        return "growth_interval must be an integer from 1 to 2^31 - 1";
    return {};
}

std::string gradScalerStateProblem(const GradScalerState& state, const GradScalerRule& rule)
{
    if (!std::isfinite(state.scale))
        return "the scale must be finite";
    if (state.growthTracker < 0 || state.growthTracker >= rule.growthInterval)
        return "growth_tracker is " + std::to_string(state.growthTracker) + "; it counts the steps since the scale last moved, from 0 to "
               "growth_interval - 1 (" + std::to_string(rule.growthInterval - 1) + ")";
    return {};
}

std::string gradScaleText(float scale) { return scaleJson(scale).dump(); }

std::string gradScalerDeclarationJson(const GradScalerDeclaration& declaration)
{
    return json{{"growth_factor", declaration.rule.growthFactor},
                {"backoff_factor", declaration.rule.backoffFactor},
                {"growth_interval", declaration.rule.growthInterval},
                {"scale", scaleJson(declaration.initial.scale)},
                {"growth_tracker", declaration.initial.growthTracker}}
        .dump();
}

GradScalerDeclaration parseGradScalerDeclaration(std::string_view text)
{
    constexpr std::string_view where = "root record: grad_scaler";
    const json object = parseUntrustedJson(text, where);
    if (!object.is_object())
        fail(where, "must be an object");
    onlyMembers(object, where, {"growth_factor", "backoff_factor", "growth_interval", "scale", "growth_tracker"});
    GradScalerDeclaration declaration;
    declaration.rule.growthFactor = numberMember(object, where, "growth_factor");
    declaration.rule.backoffFactor = numberMember(object, where, "backoff_factor");
    declaration.rule.growthInterval = integerMember(object, where, "growth_interval");
    const std::string problem = gradScalerRuleProblem(declaration.rule);
    if (!problem.empty())
        fail(where, problem);
    declaration.initial = stateOf(object, where, declaration.rule);
    return declaration;
}

std::string gradScalerStepJson(const GradScalerStep& step)
{
    return json{{"scale", scaleJson(step.state.scale)}, {"growth_tracker", step.state.growthTracker}, {"skipped", step.skipped}}.dump();
}

GradScalerStep parseGradScalerStep(std::string_view text, const GradScalerRule& rule)
{
    constexpr std::string_view where = "metadata \"grad_scaler\"";
    const json object = parseUntrustedJson(text, where);
    if (!object.is_object())
        fail(where, "must be a JSON object");
    onlyMembers(object, where, {"scale", "growth_tracker", "skipped"});
    GradScalerStep step;
    step.state = stateOf(object, where, rule);
    const json& skipped = member(object, where, "skipped");
    if (!skipped.is_boolean())
        fail(where, "\"skipped\" must be true or false");
    step.skipped = skipped.get<bool>();
    return step;
}

}  // namespace zkdv
