#include "zkdv/audit/numeric_regime.h"

#include <cctype>

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

namespace {

// "2.15" of "2.15.0+cu130": the release whose kernels a version runs; "" when it names none.
std::string releaseOf(const std::string& version)
{
    std::size_t end = 0, dots = 0;
    while (end < version.size() && (std::isdigit(static_cast<unsigned char>(version[end])) || (version[end] == '.' && dots < 2))) {
        dots += version[end] == '.';
        ++end;
    }
    const std::string text = version.substr(0, end);
    const std::size_t second = text.find('.', text.find('.') + 1);
    const std::string release = second == std::string::npos ? text : text.substr(0, second);
    return release.find('.') == std::string::npos || release.back() == '.' ? std::string() : release;
}

}  // namespace

RegimeChoice chooseRegime(const RootRecord& root, const ReplayEnvironment& replay)
{
    std::string reasons = chooseRegime(root.numerics, replay.numerics).reason;
    auto add = [&](const std::string& reason) { reasons += (reasons.empty() ? "" : "; ") + reason; };
    // The release is the trainer's claim: it may only move the replay into this regime, where
    // nothing beyond the envelope is excused (docs/replay.md, "Across torch releases").
    const std::string recorded = releaseOf(root.torchVersion), replaying = releaseOf(replay.libtorchVersion);
    if (recorded.empty() || recorded != replaying)
        add("the tape names torch \"" + root.torchVersion.substr(0, 64) + "\" and the replay runs libtorch " +
            (replay.libtorchVersion.empty() ? std::string("of an unknown release") : replay.libtorchVersion) +
            ", whose kernels may round differently");
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
