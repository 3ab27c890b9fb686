#include "zkdv/audit/numeric_regime.h"

namespace zkdv {

std::string_view regimeName(NumericRegime regime)
{
    return regime == NumericRegime::SameEnvironment ? "same-environment" : "cross-environment";
}

RegimeChoice chooseRegime(const std::optional<NumericEnvironment>& recorded, const NumericEnvironment& replay)
{
    if (!recorded)
        return {NumericRegime::CrossEnvironment, "the tape does not record its numerical environment (root member numerics, format 1.5)"};
    const std::string differences = recorded->describeDifferences(replay);
    if (differences.empty())
        return {};
    return {NumericRegime::CrossEnvironment, "the replay's numerical environment differs from the training's: " + differences};
}

}  // namespace zkdv
