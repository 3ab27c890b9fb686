#pragma once
// Which regime judges a replay: the same numerical environment as the training (every
// difference as strict as the tolerance says), or another one, where rounding differences
// are expected and a calibrated envelope relative to the model's scale applies
// (docs/replay.md, "Regimes").

#include <optional>
#include <string>
#include <string_view>

#include "zkdv/tape/numeric_environment.h"

namespace zkdv {

enum class NumericRegime { SameEnvironment, CrossEnvironment };

// "same-environment", "cross-environment" (the case's and the report's spelling).
std::string_view regimeName(NumericRegime regime);

struct RegimeChoice {
    NumericRegime regime = NumericRegime::SameEnvironment;
    std::string reason;  // why the cross-environment regime applies ("" for the same environment)
};

// `recorded` is the tape's `numerics` (none before 1.5: then nothing says the environments
// are the same, so the cross-environment regime applies).
RegimeChoice chooseRegime(const std::optional<NumericEnvironment>& recorded, const NumericEnvironment& replay);

}  // namespace zkdv
