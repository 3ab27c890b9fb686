#pragma once
// A micro-batch's loss as the training loop scaled it before differentiating it (tape format
// 1.7, section 5.4): `loss / 4` in Python is torch.div with a wrapped Python number, and so is
// this, so the recorder's and the replay's backward start from the same bits.

#include <ATen/ATen.h>

#include "zkdv/tape/loss_scale.h"

namespace zkdv {

at::Tensor scaledLoss(const at::Tensor& loss, const LossScale& scale);

// torch.amp.GradScaler.scale(loss) (tape format 1.8, section 5.6): `loss * self._scale`, where
// the scale is a float32 tensor of shape [] (torch 2.x; [1] in 1.x) on the loss's device, so a
// lower-precision loss is promoted to float32.
at::Tensor gradScaledLoss(const at::Tensor& loss, float scale, int torchMajor);

}  // namespace zkdv
