#pragma once
// Element types a tape can carry, named as safetensors names them.

#include <cstddef>
#include <optional>
#include <string_view>

namespace zkdv {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool };

// "F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL".
std::string_view dtypeName(DType dtype);
std::optional<DType> dtypeFromName(std::string_view name);
std::size_t dtypeSize(DType dtype);
bool isFloatingPoint(DType dtype);

}  // namespace zkdv
