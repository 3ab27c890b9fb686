#pragma once
// A micro-batch's loss as the training loop scaled it before differentiating it (tape format
// 1.7, section 5.4): `loss / 4` in Python is torch.div with a wrapped Python number, and so is
// this, so the recorder's and the replay's backward start from the same bits.

#include <ATen/ATen.h>

#include "zkdv/tape/loss_scale.h"

namespace zkdv {

at::Tensor scaledLoss(const at::Tensor& loss, const LossScale& scale);

}  // namespace zkdv
