#pragma once
// Which regime judges a replay: the same numerical environment as the training (every
// difference as strict as the tolerance says), or another one, where rounding differences
// are expected and a calibrated envelope relative to the model's scale applies
// (docs/replay.md, "Regimes").

#include <optional>
#include <string>
#include <string_view>

#include "zkdv/tape/determinism_profile.h"
#include "zkdv/tape/numeric_environment.h"
#include "zkdv/tape/root_record.h"

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

// Where and how a replay runs: its numerical environment and the determinism profile it runs
// with (replayDeterminism).
struct ReplayEnvironment {
    NumericEnvironment numerics;
    DeterminismProfile determinism;
    std::string libtorchVersion;  // the replaying libtorch's version ("" when unknown: compared as another release)
};

// The regime of a replay of a tape with this root: the numerical environments as above, and
// the devices and determinism profiles (docs/replay.md, "Determinism profile"). The
// cross-environment regime applies when the training ran on another kind of device, when its
// profile differs from the replay's in a switch that decides the bits, when the training's
// own step need not reproduce its bits (CUDA without deterministic algorithms), or when a
// CUDA tape records no profile, and when the tape names another torch release than the
// replaying libtorch's (or none a release reads from): a claimed release can buy at most this
// regime's envelope, never a verdict. Every reason is given, joined by "; ".
RegimeChoice chooseRegime(const RootRecord& root, const ReplayEnvironment& replay);

}  // namespace zkdv
