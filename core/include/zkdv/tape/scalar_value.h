#pragma once
// Reading one element of any tape dtype as a double (exact for every dtype but I64/U64 beyond 2^53).

#include <cstdint>

#include "zkdv/tape/dtype.h"

namespace zkdv {

double scalarToDouble(DType dtype, const std::uint8_t* element);
float halfToFloat(std::uint16_t bits);
float bfloat16ToFloat(std::uint16_t bits);

}  // namespace zkdv
