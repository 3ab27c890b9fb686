#pragma once
// How every output (CLI, reports, workstation, error messages) writes a tensor's shape: "[2, 3]".

#include <cstdint>
#include <string>
#include <vector>

namespace zkdv {

std::string shapeText(const std::vector<std::int64_t>& shape);

}  // namespace zkdv
