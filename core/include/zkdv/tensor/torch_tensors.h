#pragma once
// Crossing between tape tensors (safetensors views) and libtorch tensors (training side:
// this header exposes torch types).

#include <ATen/ATen.h>

#include "zkdv/tape/dtype.h"
#include "zkdv/tape/safetensors.h"

namespace zkdv {

at::ScalarType scalarTypeOf(DType dtype);
// Throws Error for element types a tape cannot carry (complex, quantized, …).
DType dtypeOf(at::ScalarType type);

// A CPU tensor holding a copy of the view's elements.
at::Tensor tensorFromView(const TensorView& view);
// The bytes of a contiguous CPU tensor (valid while the tensor lives).
ByteSpan tensorBytes(const at::Tensor& contiguousCpu);
// Same dtype, shape and every byte (so NaN payloads and signed zeros count).
bool bitwiseEqual(const at::Tensor& a, const at::Tensor& b);

// A parameter update's fingerprint as the tape records it (spec section 5): the L2 norm
// and the largest absolute element of the delta, in float64. Recorder and replay share it
// so both reduce in the same order.
struct UpdateFingerprint {
    double l2 = 0.0;
    double maxAbs = 0.0;
};
UpdateFingerprint updateFingerprint(const at::Tensor& delta);

}  // namespace zkdv
