#pragma once
// The smallest root record a tape-format test needs, and that root read back as an older
// format minor version (docs/tape-format.md).

#include <functional>

#include <nlohmann/json.hpp>

#include "zkdv/tape/root_record.h"

namespace zkdv::test {

// One F32 parameter "w" of shape [2] under SGD (lr 0.1), produced by "test" 1 with torch 2.15.0.
RootRecord oneParameterRoot();

// `root` written, its format minor set to `minor` and `edit` applied to the JSON, and read back.
RootRecord readAsMinor(const RootRecord& root, int minor, const std::function<void(nlohmann::json&)>& edit = {});

}  // namespace zkdv::test
