#include "zkdv/tensor/scaled_loss.h"

#include <cstdint>

namespace zkdv {

at::Tensor scaledLoss(const at::Tensor& loss, const LossScale& scale)
{
    // A Python int is wrapped as an integer scalar, a float as a double one.
    const at::Scalar by = scale.integral ? at::Scalar(static_cast<std::int64_t>(scale.by)) : at::Scalar(scale.by);
    switch (scale.op) {
    case LossScale::Op::Divide: return at::div(loss, by);
    case LossScale::Op::Multiply: return at::mul(loss, by);
    case LossScale::Op::None: break;
    }
    return loss;
}

at::Tensor gradScaledLoss(const at::Tensor& loss, float scale, int torchMajor)
{
    const std::vector<std::int64_t> shape = torchMajor >= 2 ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{1};
    return loss * at::full(shape, scale, loss.options().dtype(at::kFloat));
}

}  // namespace zkdv
