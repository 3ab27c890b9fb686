#pragma once
// The JSON form of a tape's sampling plausibility, one for every writer: the report's
// `tape.sampling_plausibility` (docs/report-schema.md) and verify's and info's --json
// (docs/cli-json.md).

#include <optional>

#include <nlohmann/json.hpp>

#include "zkdv/tape/sampling_plausibility.h"

namespace zkdv {

// null when there is none (a tape without drawn checks to count).
nlohmann::json samplingPlausibilityJson(const std::optional<SamplingPlausibility>& plausibility);

}  // namespace zkdv
