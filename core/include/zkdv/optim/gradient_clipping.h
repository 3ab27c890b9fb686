#pragma once
// torch.nn.utils' clip_grad_norm_ and clip_grad_value_, ported so that the recorder and the
// replay apply one implementation (tape format 1.7, section 5.1; docs/gradient-clipping.md).
// Each follows the arithmetic of the torch release that recorded the tape, operation by
// operation, so a clipped step trains bit for bit as the training loop's own call would.

#include <optional>
#include <vector>

#include <ATen/ATen.h>

#include "zkdv/optim/torch_release.h"
#include "zkdv/tape/gradient_transform.h"

namespace zkdv::optim {

// What torch.nn.utils of `release` does with its `foreach` argument for these gradients:
// 1.x has no such argument (nullopt); 2.x takes true or false as given and, when unset,
// uses its foreach kernels for strided CPU and CUDA tensors.
std::optional<bool> resolveForeach(std::optional<bool> requested, const std::vector<at::Tensor>& gradients, const TorchRelease& release);

// Applies `transform` in place to the defined tensors of `gradients`, as torch.nn.utils of
// `release` does. Returns clip_grad_norm_'s total norm (an undefined tensor for
// clip_grad_value_, or when no gradient is defined: torch returns tensor(0.) then, which is
// what the norm is); for GradScaler's unscale_, found_inf (a float32 scalar on the CPU, 1 when
// a gradient holds an inf or NaN). Throws zkdv::Error where torch raises: a non-finite total norm under
// error_if_nonfinite (then no gradient has changed), foreach on a device without it.
at::Tensor applyGradientTransform(const GradientTransform& transform, const std::vector<at::Tensor>& gradients, const TorchRelease& release);

}  // namespace zkdv::optim
