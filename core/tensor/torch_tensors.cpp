#include "zkdv/tensor/torch_tensors.h"

#include <cstring>

#include "zkdv/util/error.h"

namespace zkdv {

at::ScalarType scalarTypeOf(DType dtype)
{
    switch (dtype) {
    case DType::F64: return at::kDouble;
    case DType::F32: return at::kFloat;
    case DType::F16: return at::kHalf;
    case DType::BF16: return at::kBFloat16;
    case DType::I64: return at::kLong;
    case DType::I32: return at::kInt;
    case DType::I16: return at::kShort;
    case DType::I8: return at::kChar;
    case DType::U8: return at::kByte;
    case DType::Bool: return at::kBool;
    }
    throw Error("unknown dtype");
}

DType dtypeOf(at::ScalarType type)
{
    switch (type) {
    case at::kDouble: return DType::F64;
    case at::kFloat: return DType::F32;
    case at::kHalf: return DType::F16;
    case at::kBFloat16: return DType::BF16;
    case at::kLong: return DType::I64;
    case at::kInt: return DType::I32;
    case at::kShort: return DType::I16;
    case at::kChar: return DType::I8;
    case at::kByte: return DType::U8;
    case at::kBool: return DType::Bool;
    default: break;
    }
    throw Error(std::string("tensors of type ") + c10::toString(type) + " cannot be stored in a tape");
}

at::Tensor tensorFromView(const TensorView& view)
{
    at::Tensor tensor = at::empty(view.shape, at::TensorOptions().dtype(scalarTypeOf(view.dtype)));
    if (view.data.size)
        std::memcpy(tensor.data_ptr(), view.data.data, view.data.size);
    return tensor;
}

ByteSpan tensorBytes(const at::Tensor& contiguousCpu)
{
    return ByteSpan(static_cast<const std::uint8_t*>(contiguousCpu.data_ptr()), contiguousCpu.numel() * contiguousCpu.element_size());
}

bool bitwiseEqual(const at::Tensor& a, const at::Tensor& b)
{
    if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes())
        return false;
    at::Tensor left = a.to(at::kCPU).contiguous(), right = b.to(at::kCPU).contiguous();
    ByteSpan x = tensorBytes(left), y = tensorBytes(right);
    return x.size == y.size && (x.size == 0 || std::memcmp(x.data, y.data, x.size) == 0);
}

UpdateFingerprint updateFingerprint(const at::Tensor& delta)
{
    if (delta.numel() == 0)
        return {};
    return {delta.to(at::kDouble).norm().item<double>(), delta.abs().max().to(at::kDouble).item<double>()};
}

}  // namespace zkdv
