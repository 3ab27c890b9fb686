#pragma once
// The autocast (mixed precision) a step's forward passes ran under (tape format 1.7, section
// 5.5): per device type whose autocast was on, the dtype it cast to. The replay runs the sealed
// program under the same setting, so its operators cast as the training's did.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zkdv/tape/dtype.h"

namespace zkdv {

// ("cpu", BF16), ("cuda", F16): sorted by device type, each at most once. Empty: no autocast.
using AutocastSetting = std::vector<std::pair<std::string, DType>>;

// The metadata "autocast": {"cpu": "BF16"}.
std::string autocastJson(const AutocastSetting& setting);
// Reads it back; throws FormatError saying what is wrong.
AutocastSetting parseAutocast(std::string_view json);
// Why a setting cannot be recorded (a device type or dtype autocast does not take), or empty.
std::string autocastProblem(const AutocastSetting& setting);
// "torch.autocast(\"cpu\", dtype=torch.bfloat16)", joined with " and " for several.
std::string describeAutocast(const AutocastSetting& setting);

}  // namespace zkdv
