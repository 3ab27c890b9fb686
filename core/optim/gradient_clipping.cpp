#include "zkdv/optim/gradient_clipping.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>

#include <ATen/core/grad_mode.h>
#include <torch/version.h>

#include "zkdv/util/error.h"

namespace zkdv::optim {

namespace {

bool hasForeachKernels(const at::Device& device) { return device.is_cpu() || device.is_cuda(); }

// torch 2.x groups the gradients by (device, dtype) before its kernels see them. Groups are
// taken in the order their first gradient appears; torch iterates a hash map, which for one
// group (every gradient of one dtype on one device, nearly every model) is the same order.
struct GradientGroup {
    at::Device device;
    at::ScalarType dtype;
    std::vector<at::Tensor> tensors;
};

std::vector<GradientGroup> groupByDeviceAndDtype(const std::vector<at::Tensor>& gradients)
{
    std::vector<GradientGroup> groups;
    for (const at::Tensor& gradient : gradients) {
        auto it = std::find_if(groups.begin(), groups.end(), [&](const GradientGroup& group) {
            return group.device == gradient.device() && group.dtype == gradient.scalar_type();
        });
        if (it == groups.end()) {
            groups.push_back({gradient.device(), gradient.scalar_type(), {}});
            it = std::prev(groups.end());
        }
        it->tensors.push_back(gradient);
    }
    return groups;
}

bool usesForeach(const std::optional<bool>& foreach, const GradientGroup& group)
{
    if (!foreach)
        return false;
    if (*foreach && !hasForeachKernels(group.device))
        throw Error("foreach=True was passed, but can't use the foreach API on " + group.device.str() + " tensors");
    return *foreach;
}

std::string normTypeText(double normType) { return std::isinf(normType) ? "inf" : std::to_string(normType); }

// torch 1.13's clip_grad_norm_: torch.norm over each gradient's every dimension, stacked.
at::Tensor totalNormOfRelease1(const std::vector<at::Tensor>& gradients, double normType)
{
    const at::Device device = gradients.front().device();
    if (std::isinf(normType)) {
        std::vector<at::Tensor> norms;
        for (const at::Tensor& g : gradients)
            norms.push_back(g.detach().abs().max().to(device));
        return norms.size() == 1 ? norms.front() : at::max(at::stack(norms));
    }
    std::vector<at::Tensor> norms;
    for (const at::Tensor& g : gradients) {
        std::vector<std::int64_t> dims(static_cast<std::size_t>(g.dim()));
        for (std::size_t d = 0; d < dims.size(); ++d)
            dims[d] = static_cast<std::int64_t>(d);
        norms.push_back(at::norm(g.detach(), at::Scalar(normType), dims, false).to(device));
    }
    const at::Tensor stacked = at::stack(norms);
    return at::norm(stacked, at::Scalar(normType), std::vector<std::int64_t>{0}, false);
}

// torch 2.x's _get_total_norm: per (device, dtype) group, foreach norms or vector norms.
at::Tensor totalNormOfRelease2(const std::vector<GradientGroup>& groups, const std::optional<bool>& foreach, double normType,
                               const at::Device& firstDevice)
{
    std::vector<at::Tensor> norms;
    for (const GradientGroup& group : groups) {
        if (usesForeach(foreach, group)) {
            for (const at::Tensor& norm : at::_foreach_norm(group.tensors, at::Scalar(normType)))
                norms.push_back(norm);
        } else {
            for (const at::Tensor& g : group.tensors)
                norms.push_back(at::linalg_vector_norm(g, at::Scalar(normType)));
        }
    }
    for (at::Tensor& norm : norms)
        norm = norm.to(firstDevice);
    return at::linalg_vector_norm(at::stack(norms), at::Scalar(normType));
}

at::Tensor clipNorm(const GradientTransform& transform, const std::vector<at::Tensor>& gradients, const TorchRelease& release)
{
    if (gradients.empty())
        return at::zeros({}, at::kFloat);
    const std::vector<GradientGroup> groups = groupByDeviceAndDtype(gradients);
    const at::Tensor total = release.major < 2 ? totalNormOfRelease1(gradients, transform.normType)
                                               : totalNormOfRelease2(groups, transform.foreach, transform.normType, gradients.front().device());
    if (transform.errorIfNonfinite && at::logical_or(total.isnan(), total.isinf()).item<bool>())
        throw Error("The total norm of order " + normTypeText(transform.normType) +
                    " for gradients from `parameters` is non-finite, so it cannot be clipped (clip_grad_norm_ with error_if_nonfinite=True)");
    // Python's `max_norm / (total_norm + 1e-6)` is Tensor.__rdiv__: a reciprocal, then a product.
    const at::Tensor coefficient = at::reciprocal(total + 1e-6) * transform.maxNorm;
    const at::Tensor clamped = at::clamp(coefficient, c10::nullopt, at::Scalar(1.0));
    if (release.major < 2) {
        for (const at::Tensor& g : gradients)
            g.detach().mul_(clamped.to(g.device()));
        return total;
    }
    for (const GradientGroup& group : groups) {
        const at::Tensor onDevice = clamped.to(group.device);
        if (usesForeach(transform.foreach, group)) {
#if TORCH_VERSION_MAJOR >= 2
            at::_foreach_mul_(group.tensors, onDevice);
#else
            // A 1.x libtorch replaying a 2.x tape: its foreach API takes no tensor factor, and
            // its slow path is this product, tensor by tensor (the CUDA kernel may round otherwise).
            for (const at::Tensor& g : group.tensors)
                g.mul_(onDevice);
#endif
        } else {
            for (const at::Tensor& g : group.tensors)
                g.mul_(onDevice);
        }
    }
    return total;
}

void clipValue(const GradientTransform& transform, const std::vector<at::Tensor>& gradients, const TorchRelease& release)
{
    const double low = -transform.clipValue;
    const double high = transform.clipValue;
    if (release.major < 2) {
        for (const at::Tensor& g : gradients)
            g.detach().clamp_(at::Scalar(low), at::Scalar(high));
        return;
    }
    for (const GradientGroup& group : groupByDeviceAndDtype(gradients)) {
        if (usesForeach(transform.foreach, group)) {
#if TORCH_VERSION_MAJOR >= 2
            at::_foreach_clamp_min_(group.tensors, at::Scalar(low));
            at::_foreach_clamp_max_(group.tensors, at::Scalar(high));
#else
            for (const at::Tensor& g : group.tensors)  // a 1.x libtorch has no foreach clamp; clamping rounds nothing
                g.clamp_min_(at::Scalar(low)).clamp_max_(at::Scalar(high));
#endif
        } else {
            for (const at::Tensor& g : group.tensors)
                g.clamp_(at::Scalar(low), at::Scalar(high));
        }
    }
}

// GradScaler.unscale_: torch computes the float32 reciprocal of the scale in double
// (`scale.double().reciprocal().float()`) and its _amp_foreach_non_finite_check_and_unscale_
// kernels multiply every element by it in the element's opmath type (float32 for float16 and
// bfloat16, rounded back once), leave the gradients alone when it is 1, and note any inf or
// NaN among the scaled elements. The same operations here, for every release and device
// (libtorch 1.13 has no CPU kernel). Returns found_inf as torch does: a float32 0 or 1.
at::Tensor unscale(const GradientTransform& transform, const std::vector<at::Tensor>& gradients)
{
    const float inverse = static_cast<float>(1.0 / static_cast<double>(transform.scale));
    bool found = false;
    for (const at::Tensor& g : gradients) {
        if (g.layout() != at::kStrided)
            throw Error("GradScaler.unscale_ of a sparse gradient is not replayed (torch coalesces float16 ones first)");
        if (g.scalar_type() == at::kHalf)
            throw Error("Attempting to unscale FP16 gradients.");  // torch's ValueError: no step was taken
    }
    for (const at::Tensor& g : gradients) {
        if (!found && !at::isfinite(g).all().item<bool>())
            found = true;
        if (inverse == 1.0f)
            continue;
        const bool reduced = g.scalar_type() == at::kBFloat16;
        const at::Tensor factor = at::scalar_tensor(inverse, g.options().dtype(at::kFloat));
        if (reduced)
            g.copy_(g.to(at::kFloat).mul(factor));
        else
            g.mul_(factor.to(g.scalar_type()));
    }
    return at::scalar_tensor(found ? 1.0f : 0.0f, at::TensorOptions().dtype(at::kFloat));
}

}  // namespace

std::optional<bool> resolveForeach(std::optional<bool> requested, const std::vector<at::Tensor>& gradients, const TorchRelease& release)
{
    if (release.major < 2)
        return std::nullopt;
    if (requested)
        return requested;
    for (const at::Tensor& g : gradients)
        if (g.defined() && (!hasForeachKernels(g.device()) || g.layout() != at::kStrided))
            return false;
    return true;
}

at::Tensor applyGradientTransform(const GradientTransform& transform, const std::vector<at::Tensor>& gradients, const TorchRelease& release)
{
    const std::string problem = gradientTransformProblem(transform);
    if (!problem.empty())
        throw Error(transform.describe() + ": " + problem);
    std::vector<at::Tensor> defined;
    for (const at::Tensor& g : gradients)
        if (g.defined())
            defined.push_back(g);
    at::NoGradGuard noGrad;
    if (transform.kind == GradientTransform::Kind::ClipNorm)
        return clipNorm(transform, defined, release);
    if (transform.kind == GradientTransform::Kind::Unscale)
        return unscale(transform, defined);
    clipValue(transform, defined, release);
    return at::Tensor();
}

}  // namespace zkdv::optim
