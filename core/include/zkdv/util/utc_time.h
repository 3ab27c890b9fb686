#pragma once
// Timestamps as the case and the reports write them: UTC, ISO 8601, to the second.

#include <string>

namespace zkdv {

// "2026-11-29T23:01:07Z"
std::string utcNow();

}  // namespace zkdv
