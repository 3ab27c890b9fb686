#include "zkdv/tape/scalar_value.h"

#include <cstring>

#include "zkdv/util/little_endian.h"

namespace zkdv {

float halfToFloat(std::uint16_t bits)
{
    std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
    std::uint32_t exponent = (bits >> 10) & 0x1fu;
    std::uint32_t mantissa = bits & 0x3ffu;
    std::uint32_t out;
    if (exponent == 0) {
        if (mantissa == 0) {
            out = sign;
        } else {  // subnormal: renormalise into float's wider exponent range
            int shift = 0;
            while (!(mantissa & 0x400u)) {
                mantissa <<= 1;
                ++shift;
            }
            mantissa &= 0x3ffu;
            out = sign | static_cast<std::uint32_t>(127 - 15 - shift + 1) << 23 | mantissa << 13;
        }
    } else if (exponent == 0x1f) {
        out = sign | 0x7f800000u | mantissa << 13;
    } else {
        out = sign | (exponent + 127 - 15) << 23 | mantissa << 13;
    }
    float value;
    std::memcpy(&value, &out, sizeof value);
    return value;
}

float bfloat16ToFloat(std::uint16_t bits)
{
    std::uint32_t widened = static_cast<std::uint32_t>(bits) << 16;
    float value;
    std::memcpy(&value, &widened, sizeof value);
    return value;
}

double scalarToDouble(DType dtype, const std::uint8_t* p)
{
    switch (dtype) {
    case DType::F64: {
        double v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }
    case DType::F32: {
        float v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }
    case DType::F16: return halfToFloat(readLittleEndian<std::uint16_t>(p));
    case DType::BF16: return bfloat16ToFloat(readLittleEndian<std::uint16_t>(p));
    case DType::I64: return static_cast<double>(static_cast<std::int64_t>(readLittleEndian<std::uint64_t>(p)));
    case DType::I32: return static_cast<std::int32_t>(readLittleEndian<std::uint32_t>(p));
    case DType::I16: return static_cast<std::int16_t>(readLittleEndian<std::uint16_t>(p));
    case DType::I8: return static_cast<std::int8_t>(p[0]);
    case DType::U8: return p[0];
    case DType::Bool: return p[0] ? 1.0 : 0.0;
    }
    return 0.0;
}

}  // namespace zkdv
