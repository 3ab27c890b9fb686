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

namespace zkdv {

RegimeChoice chooseRegime(const RootRecord& root, const ReplayEnvironment& replay)
{
    std::string reasons = chooseRegime(root.numerics, replay.numerics).reason;
    auto add = [&](const std::string& reason) { reasons += (reasons.empty() ? "" : "; ") + reason; };
    const std::string trainedOn = root.device.rfind("cuda", 0) == 0 ? "cuda" : "cpu";
    if (trainedOn != replay.determinism.deviceKind)
        add("the training ran on " + root.device + ", the replay on " + replay.determinism.deviceKind);
    if (root.determinism) {
        if (const std::string why = root.determinism->nondeterministic(); !why.empty())
            add("the training's step need not reproduce its own bits: " + why);
        if (const std::string differ = root.determinism->describeDifferences(replay.determinism); !differ.empty())
            add("the replay's determinism profile differs from the training's: " + differ);
    } else if (trainedOn == "cuda") {
        add("the tape does not record how its GPU made its numbers (root member determinism, format 1.13)");
    }
    if (reasons.empty())
        return {};
    return {NumericRegime::CrossEnvironment, reasons};
}

}  // namespace zkdv
