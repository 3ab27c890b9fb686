#include "zkdv/tape/dtype.h"

namespace zkdv {

std::string_view dtypeName(DType dtype)
{
    switch (dtype) {
    case DType::F64: return "F64";
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I64: return "I64";
    case DType::I32: return "I32";
    case DType::I16: return "I16";
    case DType::I8: return "I8";
    case DType::U8: return "U8";
    case DType::Bool: return "BOOL";
    }
    return "";
}

std::optional<DType> dtypeFromName(std::string_view name)
{
    // Exact, case-sensitive matches only: safetensors names are upper case and a reader
    // that accepted "f32" would bless files the reference implementation rejects. The
    // parser calls this once per tensor, so it dispatches on length rather than looping.
    switch (name.size()) {
    case 2:
        if (name == "I8")
            return DType::I8;
        if (name == "U8")
            return DType::U8;
        break;
    case 3:
        if (name[0] == 'F' || name[0] == 'I') {
            const bool isFloat = name[0] == 'F';
            const std::string_view bits = name.substr(1);
            if (bits == "64")
                return isFloat ? DType::F64 : DType::I64;
            if (bits == "32")
                return isFloat ? DType::F32 : DType::I32;
            if (bits == "16")
                return isFloat ? DType::F16 : DType::I16;
        }
        break;
    case 4:
        if (name == "BF16")
            return DType::BF16;
        if (name == "BOOL")
            return DType::Bool;
        break;
    default: break;
    }
    return std::nullopt;
}

std::size_t dtypeSize(DType dtype)
{
    switch (dtype) {
    case DType::F64:
    case DType::I64: return 8;
    case DType::F32:
    case DType::I32: return 4;
    case DType::F16:
    case DType::BF16:
    case DType::I16: return 2;
    case DType::I8:
    case DType::U8:
    case DType::Bool: return 1;
    }
    return 0;
}

bool isFloatingPoint(DType dtype)
{
    return dtype == DType::F64 || dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}

}  // namespace zkdv
